package reap

import (
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/session"
)

// Plan is what `contain reap` (and the crash guard) asks to be killed.
type Plan struct {
	// Targets are the processes chosen to be reaped (none to be skipped).
	Targets []session.Choice
	// Rescan lists the chosen sessions' processes as they are now; reap
	// calls it until no new process appears, and once more at the end.
	Rescan func() ([]session.Choice, error)
	// Cgroups are leftover groups of dead contain runs: frozen first,
	// killed, then removed.
	Cgroups []cgroup.Leftover
	// Track, if not nil, finds processes of the session whether tagged or
	// not (the crash guard's: COMMAND's process group, what contain saw
	// of the session, and what those started since).
	Track *track.Tracker
	// Accounted, if not nil, gets what a leftover cgroup accounted, read
	// just before it is removed (the crash guard's report).
	Accounted *report.Resources
	Signal    syscall.Signal                   // the first signal
	Grace     time.Duration                    // then SIGKILL
	Log       func(format string, args ...any) // what -v prints; nil: nothing
	// Spare, if set, is a process that gets no first signal (it was sent
	// its own: COMMAND, after a crash), only the kill after the grace.
	Spare proc.ID
}

// Found is how reap came to a process.
type Found int

const (
	FoundByTag      Found = iota // it carries the session's tag (Outcome.Session)
	FoundInRegistry              // a registry of the session names it
	FoundInCgroup                // it is in a leftover cgroup (Outcome.Cgroup)
	FoundByTracker               // the crash guard's tracker found it
)

// Ending is how reap's work on a process ended.
type Ending int

const (
	WasGone      Ending = iota // gone before reap's first signal reached it
	EndedByFirst               // ended after the first signal
	Killed                     // killed with SIGKILL (terminated on Windows)
	LeftAlone                  // not signalled to the end: Detail says why
	CannotSignal               // a signal could not be sent (Detail): it may still run
	Survived                   // still alive after SIGKILL
	Planned                    // a dry run: Detail says what reap would do
)

// Outcome is what became of one process.
type Outcome struct {
	session.Process
	Session string // its originator value (FoundByTag, FoundInRegistry)
	Found   Found
	Cgroup  string // the leftover cgroup it was found in (FoundInCgroup)
	Ending  Ending
	Detail  string // LeftAlone: why; CannotSignal: what failed; Planned: what would be done
	Alive   bool   // it still runs: reap failed for it, or left it alone
}

// Where is where reap found it, for people: its originator value,
// "cgroup DIR" or "tracked".
func (o Outcome) Where() string {
	switch o.Found {
	case FoundInCgroup:
		return "cgroup " + o.Cgroup
	case FoundByTracker:
		return "tracked"
	}
	return o.Session
}

// Result is the outcome for people: "ended after the first signal",
// "killed with SIGKILL", "left alone: ...", and so on.
func (o Outcome) Result() string {
	switch o.Ending {
	case WasGone:
		return "was already gone"
	case EndedByFirst:
		return "ended after the first signal"
	case Killed:
		return "killed with " + killName
	case LeftAlone:
		return "left alone: " + o.Detail
	case Survived:
		return "still alive after " + killName + " (in uninterruptible sleep, or traced)"
	}
	return o.Detail
}

// CgroupOutcome is what became of one leftover cgroup.
type CgroupOutcome struct {
	Dir    string
	Result string
	Failed bool
}

// Report lists every process and cgroup reap acted on.
type Report struct {
	Processes []Outcome
	Cgroups   []CgroupOutcome
}
