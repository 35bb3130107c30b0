package daemon

// Verdict is what a run with --allow-daemons says of a process it has
// just found: whether it is a daemon that leaves the session. The tracker
// (internal/track, its Daemon question) acts on it; Judge gives it on
// Linux and macOS.
type Verdict int

const (
	// No: the process shows an environment of its own, without the
	// mark. It is a member for good, whatever it execs later.
	No Verdict = iota
	// Yes: its own environment carries RUNNING_PROCESS_IS_DAEMON=1. It
	// leaves the session at once, with every descendant it has or will
	// have.
	Yes
	// Undecided: its environment is not its own yet (forked, not yet
	// exec'd: its parent's; or in the middle of an exec). It is a member
	// asked again at each scan until it answers.
	Undecided
)
