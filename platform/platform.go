// Package platform holds everything contain does differently per OS:
// starting a command inside a kill-on-close group, forwarding signals to it,
// and closing it. Shared types live here; each OS has its own files.
package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/session"
)

// Logger receives what --verbose prints; it is never nil inside Run.
type Logger func(format string, args ...any)

// RunOptions is everything `contain run` asks of the platform.
type RunOptions struct {
	Args      []string      // COMMAND and its arguments
	Env       []string      // the complete environment, tag included
	Tag       string        // the session's RUNNING_PROCESS_ORIGINATOR value
	Timeout   time.Duration // 0: none
	Signal    syscall.Signal
	KillAfter time.Duration // 0: none
	Grace     time.Duration // between SIGTERM and SIGKILL when the group is closed
	Detach    bool
	Log       Logger
	// Collect asks for Result.Facts: what the report and -v's summary
	// say. Without it nothing is measured that costs anything.
	Collect bool
	// Report is where the report goes ("-": stderr), for the crash guard
	// to write it if contain dies.
	Report string
}

// Facts are what a run measured and saw, for the report.
type Facts struct {
	Started      time.Time // COMMAND started
	CommandEnded time.Time
	Ended        time.Time // the group was closed
	Layers       []string
	Resources    report.Resources
	Leftovers    []report.Leftover
	// KilledAfterTimeout: --kill-after's SIGKILL was sent.
	KilledAfterTimeout bool
	// ToldToStop names the signal (or Windows console event) that told
	// contain to stop, if one did.
	ToldToStop string
}

// Result tells how COMMAND ended.
type Result struct {
	Pid      int  // COMMAND's PID
	Exited   bool // COMMAND exited with Code
	Code     int
	Signaled bool // COMMAND was killed by Signal
	Signal   syscall.Signal
	TimedOut bool   // the timeout fired before COMMAND ended
	Facts    *Facts // with RunOptions.Collect, where the OS's runner gathers them
}

// StartError means COMMAND itself could not be started (not found, not
// executable), as opposed to contain failing to set up the group.
type StartError struct {
	Name string
	Err  error
}

func (e *StartError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // "fork/exec NAME: " says nothing the message does not
	}
	return fmt.Sprintf("cannot run %s: %v", e.Name, err)
}
func (e *StartError) Unwrap() error { return e.Err }

func nopLog(string, ...any) {}

func (o *RunOptions) logger() Logger {
	if o.Log == nil {
		return nopLog
	}
	return o.Log
}

// ReapPlan is what `contain reap` (and the guard) asks the platform to kill.
type ReapPlan struct {
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
	Signal    syscall.Signal // the first signal
	Grace     time.Duration  // then SIGKILL
	Log       Logger
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

// ReapReport lists every process and cgroup reap acted on.
type ReapReport struct {
	Processes []Outcome
	Cgroups   []CgroupOutcome
}
