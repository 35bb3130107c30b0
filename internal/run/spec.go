package run

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// Spec is what one run is asked to do, whoever asks: contain run's and
// contain timeout's flags once parsed (package runcmd), or a library
// Group's Options (package containment), which sends it to the copy of
// the program that holds the command, field by field on the copy's own
// pipe (what is tagged wire:"-" stays in the process that runs it).
// Check holds every rule about its values and their combinations, so both
// faces refuse the same things; Execute runs it.
type Spec struct {
	// Args are COMMAND and its arguments.
	Args []string
	// Env is COMMAND's environment before the tag is set in it; nil: this
	// process's.
	Env []string
	// Tool is the TOOL of the tag (CONTAIN when "").
	Tool string
	// Timeout sends Signal (0: the null signal, as GNU timeout -s 0)
	// after this long; KillAfter sends SIGKILL that long after it. 0:
	// never.
	Timeout   time.Duration
	Signal    syscall.Signal
	KillAfter time.Duration
	// Grace is the time between SIGTERM and SIGKILL when the group is
	// closed (0: at once).
	Grace time.Duration
	// PreserveStatus: on timeout, COMMAND's own status instead of 124.
	PreserveStatus bool
	// Detach starts COMMAND as a daemon (contain run -d) and returns.
	Detach bool
	// Verbose: contain's own lines on what it does (-v).
	Verbose bool
	// SayLeftovers: one line on stderr when the close ended processes
	// that COMMAND left running (contain run without -q), unless Verbose
	// says more. The command's alone: a library's copy says nothing on
	// its stderr, so the wire does not carry it.
	SayLeftovers bool `wire:"-"`
	// Announce: GNU timeout's --verbose, one line on stderr for each
	// signal the timeout sends COMMAND ("sending signal TERM to command
	// 'sleep'"), and nothing else (contain timeout -v). The command's
	// alone, as SayLeftovers.
	Announce bool `wire:"-"`
	// Report is where the report is written ("-": stderr; "": nowhere);
	// Keep puts it in the Outcome (the library's Reports).
	Report string
	Keep   bool
	// SendEvents: a library copy sends the run's events (package events)
	// to its program, which writes them to containment.Options.Events
	// (the copy's Events is then its pipe to the program).
	SendEvents bool
	// Limits hold for the whole tree.
	Limits limit.Set
	// AllowDaemons lets marked daemons leave the group (--allow-daemons).
	AllowDaemons bool
	// OnTimeout is the shell command run at the timeout ("": none).
	OnTimeout string
	// NoTerminal keeps the terminal from COMMAND: contain run hands its
	// controlling terminal to COMMAND's group; a library does not unless
	// asked (containment.Options.Terminal).
	NoTerminal bool
	// Hold runs no COMMAND (Args nil): the run holds a session whose
	// processes another process starts, tagged with this run's tag (a
	// library Group's holder), and closes it when told to stop. Timeout,
	// KillAfter, OnTimeout and PreserveStatus are the starter's, per
	// process, and refused here.
	Hold bool

	// What only the process that runs the Spec can hand it, never sent.

	// Prepared is what PrepareRun started (nil: no crash guard, no shim).
	Prepared *Prepared `wire:"-"`
	// Close, on one value received, asks the run to close its group as
	// a request to stop does (the library's Group.Close); told_to_stop
	// says CloseRequest.
	Close <-chan struct{} `wire:"-"`
	// Started is told COMMAND's PID once it runs (nil: nobody).
	Started func(pid int) `wire:"-"`
	// Held, with Hold, is told once the session is held where its
	// processes are to start: on Linux the cgroup ("": none), on Windows
	// the job object's handle in this process, in decimal, for its
	// starter to duplicate. Members are the processes started in it, as
	// their starter says, members from then on whatever their
	// environment shows (a title written over it).
	Held    func(in string) `wire:"-"`
	Members <-chan proc.ID  `wire:"-"`
	// Log receives the lines -v says, each ended by a newline (nil:
	// stderr).
	Log io.Writer `wire:"-"`
	// Events receives the run's events (package events), one JSON object
	// a line, as they happen; nil: none, unless EventsTo names where.
	Events io.Writer `wire:"-"`
	// EventsTo is contain run --events: a FILE, "-" (stderr) or fd:N (a
	// descriptor contain inherited); Execute opens it once the Spec is
	// checked. "": none.
	EventsTo string `wire:"-"`
	// Explain may add to the error of a COMMAND that was not found (a
	// hint for a habit of the face's users); nil: nothing.
	Explain func(err error) error `wire:"-"`
}

// CloseRequest is what the report's told_to_stop says when the program
// that holds a library Group closed it.
const CloseRequest = "closed by its program (Group.Close)"

// SpecError is a Spec refused by Check: Option names the setting, as
// contain run's flag without its dashes ("" for a combination); each face
// names it in its own words.
type SpecError struct {
	Option string
	Err    error
}

func (e *SpecError) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return "--" + e.Option + ": " + e.Err.Error()
}

func (e *SpecError) Unwrap() error { return e.Err }

func specErr(option, format string, args ...any) error {
	return &SpecError{Option: option, Err: fmt.Errorf(format, args...)}
}

// ToolOf is the TOOL of s's tag.
func (s *Spec) ToolOf() string {
	if s.Tool == "" {
		return "CONTAIN"
	}
	return s.Tool
}

// Check refuses a Spec that contain run would refuse, the first fault
// found: values out of range, and the combinations that make no sense.
// It checks no COMMAND when Args is nil (a library Group checks its
// Options before it has one).
func (s *Spec) Check() error {
	if s.Args != nil && len(s.Args) == 0 && !s.Hold {
		return &SpecError{Err: errors.New("missing COMMAND (usage: contain run [OPTIONS] [--] COMMAND [ARG...])")}
	}
	if err := tag.ValidateTool(s.ToolOf()); err != nil {
		return &SpecError{Option: "originator", Err: err}
	}
	for _, d := range []struct {
		option string
		d      time.Duration
	}{{"timeout", s.Timeout}, {"kill-after", s.KillAfter}, {"grace", s.Grace}} {
		if d.d < 0 {
			return specErr(d.option, "%v is negative", d.d)
		}
	}
	if s.Signal < 0 || s.Signal > 255 {
		return specErr("signal", "no signal %d", int(s.Signal))
	}
	if err := checkLimits(s.Limits); err != nil {
		return err
	}
	if s.OnTimeout != "" && strings.TrimSpace(s.OnTimeout) == "" {
		return specErr("on-timeout", "empty command")
	}
	if s.Report != "" {
		if err := report.CheckPath(s.Report); err != nil {
			return &SpecError{Option: "report", Err: err}
		}
	}
	if s.EventsTo != "" && s.Events == nil {
		if err := events.Check(s.EventsTo); err != nil {
			return &SpecError{Option: "events", Err: err}
		}
	}
	if s.Hold {
		switch {
		case len(s.Args) > 0:
			return errors.New("a held session runs no COMMAND")
		case s.Detach || s.Timeout > 0 || s.KillAfter > 0 || s.PreserveStatus || s.OnTimeout != "":
			return errors.New("a held session cannot be detached nor timed out: the timeout is each process's starter's")
		}
	}
	if !s.Detach {
		return nil
	}
	switch {
	case s.Timeout > 0 || s.KillAfter > 0 || s.PreserveStatus:
		return &SpecError{Err: errors.New("--detach cannot be combined with --timeout, --kill-after or --preserve-status")}
	case s.Limits.Any() || s.Limits.Strict:
		return &SpecError{Err: errors.New("--detach cannot be combined with --memory, --pids, --cpu-time, --cpus or --strict-limits: a detached COMMAND has no contain to hold its limits")}
	case s.AllowDaemons || s.OnTimeout != "":
		return &SpecError{Err: errors.New("--detach cannot be combined with --allow-daemons or --on-timeout: a detached COMMAND has no contain to close its group or time it out")}
	}
	return nil
}

// checkLimits checks the limits' values as contain run's parsers do
// (package limit), once they are numbers.
func checkLimits(l limit.Set) error {
	if opt, err := l.Check(); err != nil {
		return &SpecError{Option: opt, Err: err}
	}
	if l.Strict && !l.Any() {
		return specErr("strict-limits", "no limit asked for (--memory, --pids, --cpu-time or --cpus)")
	}
	return nil
}
