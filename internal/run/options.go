// Package run is `contain run`: COMMAND started inside a kill-on-close
// group (process group, cgroup, subreaper, the shim; a Job Object on
// Windows), the tag injected, signals and the terminal forwarded, the
// timeout, the close, and what the run measured for the report; and the
// crash guard and the shim, which close the group should contain die.
package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/hook"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
)

// Logger receives what --verbose prints; it is never nil inside Run.
type Logger func(format string, args ...any)

// Options is everything `contain run` asks of a run.
type Options struct {
	Args      []string      // COMMAND and its arguments
	Env       []string      // the complete environment, tag included
	Tag       string        // the session's RUNNING_PROCESS_ORIGINATOR value
	Timeout   time.Duration // 0: none
	Signal    syscall.Signal
	KillAfter time.Duration // 0: none
	Grace     time.Duration // between SIGTERM and SIGKILL when the group is closed
	Detach    bool
	Log       Logger
	// Announce, when set, is told of each signal the timeout sends
	// COMMAND (GNU timeout's --verbose: Spec.Announce).
	Announce func(sig syscall.Signal)
	// Collect asks for Result.Facts: what the report and -v's summary
	// say. Without it nothing is measured that costs anything.
	Collect bool
	// Report is where the report goes ("-": stderr), for the crash guard
	// to write it if contain dies.
	Report string
	// Events takes the run's events as they happen (package events);
	// nil: none are made.
	Events *events.Writer
	// eventsDone closes what Spec opened for Events, once the last line
	// is written.
	eventsDone func()
	// Limits are the whole-tree limits asked for.
	Limits limit.Set
	// AllowDaemons lets the processes that carry RUNNING_PROCESS_IS_DAEMON=1
	// when contain first sees them (contain run -d inside) leave the group
	// and outlive the run.
	AllowDaemons bool
	// OnTimeout is a shell command that runs when the timeout fires,
	// outside the group and for at most the grace period, before the
	// timeout signal is sent; "": none.
	OnTimeout string
	// NoTerminal keeps the controlling terminal from COMMAND (Spec).
	NoTerminal bool
	// Close, on one value, asks the run to close its group (Spec.Close);
	// Started is told COMMAND's PID once it runs. nil: neither.
	Close   <-chan struct{}
	Started func(pid int)
	// Hold runs no COMMAND: the session holds what another process
	// starts with Tag (Spec.Hold), until a request to stop; Held is told
	// where they are to start (Spec.Held) once it holds.
	Hold    bool
	Held    func(in string)
	Members <-chan proc.ID
	// Prepared is what PrepareRun started for this run: contain's own
	// main passes it; nil (a test binary's Run) means no crash guard and
	// no shim.
	Prepared *Prepared
}

// Result tells how COMMAND ended.
type Result struct {
	Pid      int  // COMMAND's PID
	Exited   bool // COMMAND exited with Code
	Code     int
	Signaled bool // COMMAND was killed by Signal
	Signal   syscall.Signal
	TimedOut bool // the timeout fired before COMMAND ended
	// Leftovers are the names of the processes still running once
	// COMMAND had ended, which the close asked to end.
	Leftovers []string
	Facts     *account.Facts // with RunOptions.Collect, where the OS's runner gathers them
	// Limit tells that a limit ended the run (nil: none did); Limits is
	// the account of every limit asked for (nil: none was).
	Limit  *LimitEnd
	Limits *limit.Watch
}

// LimitEnd is a limit that ended the run.
type LimitEnd struct {
	Kind    limit.Kind
	Message string // "memory limit 100 MiB exceeded: ...", for stderr
}

// Killed reports whether the limit killed the tree (memory, processes):
// contain then exits 137, as Docker does for an OOM kill. A CPU time
// limit ends the run as the timeout does.
func (e *LimitEnd) Killed() bool { return e != nil && (e.Kind == limit.Memory || e.Kind == limit.Pids) }

// StartError means COMMAND itself could not be started (not found, not
// executable), as opposed to contain failing to set up the group.
type StartError struct {
	Name string
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("cannot run %s: %s", e.Name, e.Cause())
}

// Cause says why COMMAND could not start, without Go's words around it
// and without its name, which the message gives once: os/exec's `exec:
// "x": executable file not found in $PATH` is "not found in $PATH",
// "fork/exec x: permission denied" is "permission denied".
func (e *StartError) Cause() string {
	err := e.Err
	if errors.Is(err, exec.ErrNotFound) {
		if runtime.GOOS == "windows" {
			return "not found in %PATH%"
		}
		return "not found in $PATH"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}
func (e *StartError) Unwrap() error { return e.Err }

func nopLog(string, ...any) {}

// closeEvents ends the events, their last line written.
func (o *Options) closeEvents() {
	if o.eventsDone != nil {
		o.eventsDone()
	}
}

func (o *Options) logger() Logger {
	if o.Log == nil {
		return nopLog
	}
	return o.Log
}

// hook is what the --on-timeout command needs of the run.
func (o *Options) hook() hook.Options {
	return hook.Options{Command: o.OnTimeout, Grace: o.Grace, Tag: o.Tag, Log: o.logger()}
}

// timing is the supervision loop's Timing for o: Announce told of the
// timeout signal, then of SIGKILL; nil without Announce.
func (o *Options) timing() func(kill bool) {
	if o.Announce == nil {
		return nil
	}
	return func(kill bool) {
		if kill {
			o.Announce(syscall.SIGKILL)
		} else {
			o.Announce(o.Signal)
		}
	}
}
