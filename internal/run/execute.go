package run

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// Outcome is how a run ended, whoever asked for it: contain's exit
// status, the signal it ends itself with, COMMAND's PID, the report when
// kept, and the error that ended it early (printed by the face).
type Outcome struct {
	// Status is contain run's exit status (GNU timeout's).
	Status int
	// Signal, when set, killed COMMAND: contain run ends itself with it
	// once its group is closed, as GNU timeout does (the status is 128+N
	// either way).
	Signal syscall.Signal
	// Pid is COMMAND's (0: it did not start).
	Pid int
	// Exited: COMMAND exited with Code; KilledBy: the signal that ended
	// COMMAND (0: none), whoever sent it.
	Exited   bool
	Code     int
	KilledBy syscall.Signal
	// TimedOut: the timeout (or the CPU time limit) fired.
	TimedOut bool
	// Limit says which limit ended the run ("": none).
	Limit string
	// Report, with Spec.Keep.
	Report *report.Report
	// Err ended the run before COMMAND ran, or is why it could not start;
	// its words (Error) are what crosses a pipe.
	Err   error
	Error string
}

// exitKilledAfter: COMMAND killed by --kill-after's SIGKILL, or by a
// limit, as GNU timeout and Docker say it.
const exitKilledAfter = 128 + 9

// Execute runs s: the one way into a run for contain run, contain timeout
// and the library's copy. It checks s, starts COMMAND, waits for it and
// the close, writes the report where asked and returns the Outcome. It
// prints nothing of Outcome.Err: the face does. stdout gets --detach's
// PID; stderr contain's own lines (a limit's end, a report that could not
// be written).
func Execute(s Spec, stdout, stderr io.Writer) Outcome {
	defer s.Prepared.Drop()
	o, err := s.options(stderr)
	if err != nil {
		return failed(status.Failed, err)
	}
	defer o.closeEvents()
	if off := layers.Off(); len(off) > 0 {
		// A switch for contain's own tests is never honoured silently.
		text.Fprintf(stderr, "contain: %s turns off %s: a switch for contain's tests; what COMMAND starts may outlive it\n", layers.Var, strings.Join(off, ", "))
	}
	began := time.Now()
	res, err := Run(o)
	if err != nil {
		code := startStatus(err)
		if code == status.NotFound && s.Explain != nil {
			err = s.Explain(err)
		}
		out := failed(code, err)
		out.Report = s.finish(o, began, nil, out, stderr)
		emitEnd(o, nil, out)
		return out
	}
	out := Outcome{Pid: res.Pid, TimedOut: res.TimedOut, Exited: res.Exited, Code: res.Code}
	if res.Signaled {
		out.KilledBy = res.Signal
	}
	if s.Detach {
		fmt.Fprintln(stdout, res.Pid)
		o.Events.Emit(events.Started{PID: res.Pid, Command: o.Args, ContainPID: os.Getpid(), Detached: true})
		out.Report = s.finish(o, began, &res, out, stderr)
		emitEnd(o, &res, out)
		return out
	}
	if res.Limit != nil {
		out.Limit = res.Limit.Kind.Option()
		text.Fprintf(stderr, "contain: %s\n", res.Limit.Message)
	}
	if res.Signaled && !res.TimedOut && !res.Limit.Killed() {
		out.Signal = res.Signal
	}
	if s.SayLeftovers && !s.Verbose && len(res.Leftovers) > 0 {
		// What a CI step's author wants to know: the script left
		// these running.
		text.Fprintf(stderr, "contain: ended %s that %s left running (%s); -v says more, -q nothing\n",
			text.Plural(len(res.Leftovers), "process", "processes"), filepath.Base(s.Args[0]), report.Names(res.Leftovers))
	}
	out.Status = exitStatus(res, s.PreserveStatus)
	out.Report = s.finish(o, began, &res, out, stderr)
	emitEnd(o, &res, out)
	return out
}

// failed is the Outcome of a run that ended with err.
func failed(code int, err error) Outcome {
	return Outcome{Status: code, Err: err, Error: err.Error()}
}

// options are the engine's Options for s, checked.
func (s *Spec) options(stderr io.Writer) (Options, error) {
	if err := s.Check(); err != nil {
		return Options{}, err
	}
	o := Options{Args: s.Args, Detach: s.Detach, Prepared: s.Prepared, Timeout: s.Timeout, KillAfter: s.KillAfter,
		Grace: s.Grace, Signal: s.Signal, Limits: s.Limits, AllowDaemons: s.AllowDaemons, OnTimeout: s.OnTimeout,
		NoTerminal: s.NoTerminal || s.Hold, Close: s.Close, Started: s.Started, Hold: s.Hold, Held: s.Held, Members: s.Members}
	o.Report = s.Report
	if o.Report != "" && o.Report != "-" {
		// The crash guard may write it: from the same directory, but made
		// absolute all the same.
		if abs, err := filepath.Abs(o.Report); err == nil {
			o.Report = abs
		}
	}
	o.Tag = tag.Format(s.ToolOf(), os.Getpid())
	ev, done, err := s.openEvents(o.Tag, stderr)
	if err != nil {
		return Options{}, err
	}
	o.Events, o.eventsDone = ev, done
	// The events say what the report says, as it happens: the same
	// account.
	o.Collect = o.Report != "" || s.Verbose || s.Keep || o.Events != nil
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	env = tag.SetEnv(env, tag.Var, o.Tag)
	daemon := ""
	if o.Detach {
		daemon = "1"
	}
	o.Env = tag.SetEnv(env, tag.DaemonVar, daemon)
	if s.Announce && len(s.Args) > 0 {
		command := text.Quote(s.Args[0])
		o.Announce = func(sig syscall.Signal) {
			text.Fprintf(stderr, "contain: sending signal %s to command %s\n", strings.TrimPrefix(signals.Name(sig), "SIG"), command)
		}
	}
	if s.Verbose {
		// Inside another session (a nested contain run, a tool that tags
		// its processes), every line names this contain: whose "done:" is
		// whose must be plain.
		prefix := "contain: "
		if os.Getenv(tag.Var) != "" {
			prefix = fmt.Sprintf("contain[%d]: ", os.Getpid())
		}
		w := s.Log
		if w == nil {
			w = stderr
		}
		// Its lines name other processes: text.Logger escapes them.
		o.Log = text.Logger(w, prefix)
		if signal.Ignored(syscall.SIGINT) {
			o.Log("SIGINT was ignored when contain started (a background job of a shell without job control): it stays ignored for contain and COMMAND, as with GNU timeout; stop contain with SIGTERM instead")
		}
	}
	return o, nil
}

// finish writes the report where asked and, with -v, its summary line;
// it returns the report when s keeps it. A report that cannot be written
// is one line on stderr; it changes nothing else.
func (s *Spec) finish(o Options, began time.Time, res *Result, out Outcome, stderr io.Writer) *report.Report {
	if o.Report == "" && o.Log == nil && !s.Keep {
		return nil
	}
	r := BuildReport(o, began, res, out)
	if o.Log != nil && res != nil && !o.Detach {
		o.Log("%s", report.Summary(r))
	}
	if o.Report != "" {
		if err := report.Write(o.Report, r, stderr); err != nil {
			text.Fprintf(stderr, "contain: cannot write the report: %v\n", err)
		}
	}
	if !s.Keep {
		return nil
	}
	return r
}

// BuildReport is the report of the run: how it ended (out), what it
// measured (res, nil when COMMAND did not start), laid out by the one
// builder of every report (account.Build).
func BuildReport(o Options, began time.Time, res *Result, out Outcome) *report.Report {
	a := account.Run{WrittenBy: "contain", Command: o.Args, ContainPID: os.Getpid(), Tag: o.Tag, Began: began,
		NoFacts: "nothing ran inside contain's group"}
	e := &a.Ending
	e.Absent = map[string]string{}
	e.ContainExitStatus = report.Ptr(out.Status)
	if out.Signal != 0 {
		e.ContainSignal = signals.Name(out.Signal)
	}
	switch {
	case o.Hold:
		e.Absent["exit_code"] = "a held session (a library Group) runs no COMMAND: each command's end is its program's (Group.Wait)"
	case out.Err != nil:
		e.Absent["exit_code"] = "COMMAND could not be started: " + out.Err.Error()
	case o.Detach:
		e.Absent["exit_code"] = "detached: contain does not wait for COMMAND"
	case res.Exited:
		e.ExitCode = report.Ptr(res.Code)
	case res.Signaled:
		e.Signal = signals.Name(res.Signal)
	}
	if res != nil && !o.Detach {
		if !o.Hold {
			e.TimedOut = report.Ptr(res.TimedOut)
		}
		a.Limits = res.Limits.Report()
	}
	if res != nil {
		a.Facts = res.Facts
	}
	if f := a.Facts; f != nil {
		e.KilledAfterTimeout = report.Ptr(f.KilledAfterTimeout)
		e.ToldToStop = f.ToldToStop
	}
	return account.Build(a)
}

// exitStatus maps how COMMAND ended to contain's status, as GNU timeout
// does: on timeout 124, unless COMMAND had to be killed with SIGKILL (137)
// or --preserve-status asks for COMMAND's own status.
func exitStatus(res Result, preserve bool) int {
	if res.Limit.Killed() {
		return exitKilledAfter // as Docker's 137 for an OOM kill
	}
	code := res.Code
	if res.Signaled {
		code = 128 + int(res.Signal)
		if res.TimedOut && res.Signal == syscall.SIGKILL {
			return exitKilledAfter
		}
	}
	if res.TimedOut && !preserve {
		return status.TimedOut
	}
	return code
}

// startStatus is 127 when COMMAND was not found, 126 when it was found but
// could not be executed, 125 when contain itself failed.
func startStatus(err error) int {
	var se *StartError
	if !errors.As(err, &se) {
		return status.Failed
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return status.NotFound
	}
	return status.CannotExec
}

// Exit ends this process as o says: by the signal that killed COMMAND
// where there is one (see Outcome.Signal), else with o.Status.
func Exit(o Outcome) {
	if o.Signal != 0 {
		ExitBySignal(o.Signal) // returns only if it could not
	}
	os.Exit(o.Status)
}
