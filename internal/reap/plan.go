package reap

import (
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
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
	Track *proc.Tracker
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

// Outcome is what became of one process.
type Outcome struct {
	session.Process
	Session string // its originator value, or the cgroup it was found in
	Result  string // for people: "ended after SIGTERM", "killed with SIGKILL", ...
	Alive   bool   // it still runs: reap failed for it
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
