// Package runcmd is `contain run` before urfave/cli: its options (the
// one table that main's urfave/cli command shows in help, completion and
// the man page), their one parser, the run itself and its exit status.
// Dispatch runs it; internal/earlyrun calls Dispatch from its init
// function, main on Windows.
package runcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/dispatch"
	"github.com/contain-cli/contain/internal/getopt"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/tag"
)

var dispatched bool

// DispatchInInit is Dispatch for contain's own main on Linux and macOS,
// which calls it from an init function (internal/earlyrun): contain run
// then relies on the runtime's keeping the main goroutine on the main
// thread during package initialisation (run.PrepareRunInInit).
func DispatchInInit(args []string) {
	inInit = true
	Dispatch(args)
	inInit = false
}

// inInit: DispatchInInit is running.
var inInit bool

// fromEnvironment: an option's environment variable sets its default
// (CONTAIN_ORIGINATOR, CONTAIN_REPORT). The library's copy turns it off
// (IgnoreEnvironment): the environment it runs with is its command's.
var fromEnvironment = true

// IgnoreEnvironment makes Main read no option from the environment: every
// setting comes from the arguments Main is given.
func IgnoreEnvironment() { fromEnvironment = false }

// Dispatch runs contain run and the crash guard, args being os.Args, and
// exits; it returns for anything else, contain run's help included, and
// when it ran before.
func Dispatch(args []string) {
	if dispatched || len(args) < 2 {
		return
	}
	dispatched = true
	dispatch.Hidden(args, inInit, nil)
	switch args[1] {
	case "run", TimeoutCommand:
		// Subscribing to the forwarded signals is the slowest step of
		// contain run's set-up; it runs while the options are parsed.
		prepared := prepare()
		if code, ok := Main(args, prepared, os.Stdout, nosigpipe.Stderr()); ok {
			Exit(code)
		}
		// help: urfave/cli's to show
	}
}

// Exit ends contain run with code, or, when COMMAND was killed by a
// signal, with that signal (see endSignal).
func Exit(code int) {
	if endSignal != 0 {
		run.ExitBySignal(endSignal) // returns only if it could not
	}
	os.Exit(code)
}

// Option is one option of contain run.
type Option struct {
	Name    string
	Aliases []string
	Value   string // the default (string options)
	EnvVar  string // the environment variable that sets it, if any
	Usage   string
	Bool    bool
}

// Options are contain run's options, in the order --help lists them.
var Options = []Option{
	{Name: "originator", Aliases: []string{"o"}, Value: "CONTAIN", EnvVar: "CONTAIN_ORIGINATOR",
		Usage: "the `TOOL` part of the tag (1-64 of A-Z a-z 0-9 _ . -)"},
	{Name: "timeout", Aliases: []string{"t"}, Usage: "send the timeout signal after `DURATION` (0: never)"},
	{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "the timeout signal `SIG`: TERM, SIGTERM or 15"},
	{Name: "kill-after", Aliases: []string{"k"}, Usage: "SIGKILL if still running `DURATION` after the timeout signal"},
	{Name: "preserve-status", Aliases: []string{"p"}, Bool: true, Usage: "on timeout, exit with COMMAND's own status instead of 124"},
	{Name: "grace", Aliases: []string{"g"}, Value: "2s", Usage: "`DURATION` between SIGTERM and SIGKILL when the group is closed"},
	{Name: "detach", Aliases: []string{"d"}, Bool: true, Usage: "start COMMAND in a new session marked as a daemon, print its PID, return at once"},
	{Name: "verbose", Aliases: []string{"v"}, Bool: true, Usage: "say on stderr what is done"},
	{Name: "quiet", Aliases: []string{"q"}, Bool: true, Usage: "say nothing of the leftovers ended (contain run says one line when COMMAND left processes running)"},
	{Name: "report", EnvVar: "CONTAIN_REPORT", Usage: "when done, write a JSON report of the whole tree to `FILE` (-: stderr)"},
	{Name: "events", Usage: "write what happens as it happens (start, escapees, daemons kept, limits hit, signals sent, leftovers ended, the end), one JSON object a line, to `FILE` (-: stderr; fd:N: descriptor N)"},
	{Name: "memory", Aliases: []string{"m"}, Usage: "limit the whole tree's resident memory to `SIZE` (512M, 2G, 2GiB; binary units): exceeding it kills the tree, exit 137"},
	{Name: "pids", Aliases: []string{"pids-limit"}, Usage: "at most `N` processes alive in the tree at once"},
	{Name: "cpu-time", Usage: "limit the whole tree's CPU time to `DURATION`: exceeding it acts as the timeout (124, or 137 after --kill-after)"},
	{Name: "cpus", Usage: "hold the tree to a CPU share `X` (1.5 CPUs, or 150%): throttles, never kills"},
	{Name: "strict-limits", Bool: true, Usage: "exit 125 before COMMAND runs if a limit asked for cannot be enforced by the kernel"},
	{Name: "allow-daemons", Bool: true, Usage: "let processes marked RUNNING_PROCESS_IS_DAEMON=1 when first seen (contain run -d inside) leave the group and outlive the run"},
	{Name: "on-timeout", Usage: "when the timeout fires, run the shell command `CMD` first (outside the group, at most the grace period), then send the timeout signal"},
	{Name: "foreground", Aliases: []string{"f"}, Bool: true, Usage: "accepted for GNU timeout compatibility: COMMAND gets the terminal anyway, and containment stays on (children are timed out and killed too)"},
}

// Names are the option's name and aliases.
func (o Option) Names() []string { return append([]string{o.Name}, o.Aliases...) }

// ParseDuration reads a DURATION of contain's options (see parseDuration).
func ParseDuration(s string) (time.Duration, error) { return parseDuration(s) }

// runFailed is an error of contain itself: status 125.
func runFailed(format string, args ...any) error {
	return &status.Error{Code: status.Failed, Err: fmt.Errorf(format, args...)}
}

// optionFailed is a bad value of contain run's option: status 125, and
// Main names the command before it (usageWords).
func optionFailed(option string, err error) error {
	return &status.Error{Code: status.Failed, Err: &run.SpecError{Option: option, Err: err}}
}

// usageWords puts cmd before err where err is about what was typed (an
// option's value, a missing COMMAND), so that every such line reads
// "contain: CMD: ...", as the other commands' do.
//
// contain timeout says a COMMAND that could not start in GNU timeout's
// words: "failed to run command ‘x’: No such file or directory".
func usageWords(cmd string, err error) error {
	if err == nil {
		return nil
	}
	code := status.Failed
	var st *status.Error
	if errors.As(err, &st) {
		code = st.Code
	}
	var se *run.SpecError
	if errors.As(err, &se) {
		return &status.Error{Code: code, Err: fmt.Errorf("%s: %w", cmd, se)}
	}
	var start *run.StartError
	if cmd == TimeoutCommand && errors.As(err, &start) {
		return &status.Error{Code: code, Err: errors.New("failed to run command " + text.Quote(start.Name) + ": " + gnuCause(start))}
	}
	return err
}

// gnuCause is why COMMAND could not start, as strerror(3) says it (GNU
// timeout's words): execvp's ENOENT where it was not found.
func gnuCause(e *run.StartError) string {
	if errors.Is(e.Err, exec.ErrNotFound) {
		return "No such file or directory"
	}
	c := e.Cause()
	if c == "" {
		return c
	}
	return strings.ToUpper(c[:1]) + c[1:]
}

// spec is the run.Spec the parsed options ask for: their syntax read
// here, every rule about their values in run.Spec.Check.
func spec(c parsedOptions, prepared *run.Prepared, args []string) (run.Spec, error) {
	s := run.Spec{Args: args, Tool: c.String("originator"), Detach: c.Bool("detach"), Prepared: prepared,
		PreserveStatus: c.Bool("preserve-status"), Verbose: c.Bool("verbose"), Report: c.String("report"),
		AllowDaemons: c.Bool("allow-daemons"), EventsTo: c.String("events")}
	if c.IsSet("events") && s.EventsTo == "" {
		return s, optionFailed("events", errors.New("empty: give a FILE, - for stderr, or fd:N"))
	}
	if s.Args == nil {
		s.Args = []string{}
	}
	// contain run says what COMMAND left running; contain timeout stays
	// as silent as GNU timeout.
	s.SayLeftovers = c.cmd == "run" && !c.Bool("quiet")
	if c.cmd == TimeoutCommand && c.Bool("verbose") {
		// GNU timeout's -v: its one line when the timeout signals;
		// contain's own lines need a second -v.
		s.Announce, s.Verbose = true, c.Times("verbose") > 1
	}
	if s.Tool == "" && len(s.Args) > 0 {
		// Given empty (-o ''): refused, not taken for the default.
		return s, optionFailed("originator", tag.ValidateTool(""))
	}
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"timeout", &s.Timeout}, {"kill-after", &s.KillAfter}, {"grace", &s.Grace}} {
		if !c.IsSet(d.flag) && c.String(d.flag) == "" {
			continue
		}
		v, err := parseDuration(c.String(d.flag))
		if err != nil {
			return s, optionFailed(d.flag, err)
		}
		*d.dst = v
	}
	sig, err := signals.Parse(c.String("signal"))
	if err != nil {
		return s, optionFailed("signal", err)
	}
	s.Signal = sig
	if s.Detach && c.IsSet("kill-after") {
		// --kill-after 0 as well: given, it asks for what -d cannot do.
		return s, &status.Error{Code: status.Failed, Err: &run.SpecError{Err: errors.New("--detach cannot be combined with --timeout, --kill-after or --preserve-status")}}
	}
	if s.Limits, err = parseLimits(c); err != nil {
		return s, err
	}
	if c.IsSet("on-timeout") {
		s.OnTimeout = c.String("on-timeout")
		if strings.TrimSpace(s.OnTimeout) == "" {
			return s, optionFailed("on-timeout", errors.New("empty command"))
		}
	}
	if c.cmd == "run" && !c.IsSet("timeout") && len(args) > 1 {
		s.Explain = func(err error) error { return timeoutHabit(err, args) }
	}
	return s, nil // its values are checked by run.Execute (Spec.Check)
}

// runParsed runs `contain run` with its options parsed and args the
// COMMAND.
func runParsed(c parsedOptions, prepared *run.Prepared, args []string, stdout, stderr io.Writer) error {
	s, err := spec(c, prepared, args)
	if err != nil {
		return err
	}
	out := run.Execute(s, stdout, stderr)
	endSignal = out.Signal
	if out.Status == 0 && out.Err == nil {
		return nil
	}
	return &status.Error{Code: out.Status, Err: out.Err}
}

// endSignal, when set, is the signal that killed COMMAND: contain run ends
// itself with it once its group is closed, as GNU timeout does (the exit
// status is 128+N either way).
var endSignal syscall.Signal

// Main runs `contain run ...` (args as os.Args) and returns its exit
// status. It is contain run's one option parser: the standard flag
// package, with each name of an option its own flag, as urfave/cli would
// parse them, and an option's environment variable setting its default
// (set but empty counts as unset). Help is urfave/cli's to show: ok is
// false then.
//
// prepared is what run.PrepareRun started (nil: nothing): the run takes
// it, and what it does not take (--detach, a bad option, help) is dropped
// before Main returns, so that nothing of it outlives contain.
func Main(args []string, prepared *run.Prepared, stdout, stderr io.Writer) (code int, ok bool) {
	defer prepared.Drop()
	if len(args) < 2 || (args[1] != "run" && args[1] != TimeoutCommand) {
		return 0, false
	}
	cmd := args[1]
	p, err := parseOptions(args[2:])
	var se *getopt.SyntaxError
	switch {
	case errors.As(err, &se):
		return status.Of(runFailed("%s: %v (see contain %s --help)", cmd, err, cmd), stderr), true
	case err != nil:
		return status.Of(runFailed("%v", err), stderr), true
	case p.help:
		return 0, false
	}
	p.cmd = cmd
	if cmd == TimeoutCommand {
		if err := timeoutDuration(&p); err != nil {
			return status.Of(err, stderr), true
		}
	}
	return status.Of(usageWords(cmd, runParsed(p, prepared, p.args, stdout, stderr)), stderr), true
}

// parseLimits reads --memory, --pids, --cpu-time, --cpus and
// --strict-limits.
func parseLimits(c parsedOptions) (limit.Set, error) {
	var l limit.Set
	var err error
	given := func(name string) (string, bool) {
		v := c.String(name)
		return v, c.IsSet(name) || v != ""
	}
	if v, ok := given("memory"); ok {
		if l.Memory, err = limit.ParseSize(v); err != nil {
			return l, optionFailed("memory", err)
		}
	}
	if v, ok := given("pids"); ok {
		if l.Pids, err = limit.ParsePids(v); err != nil {
			return l, optionFailed("pids", err)
		}
	}
	if v, ok := given("cpu-time"); ok {
		d, err := parseDuration(v)
		if err == nil {
			err = limit.CheckCPUTime(d)
		}
		if err != nil {
			return l, optionFailed("cpu-time", err)
		}
		l.CPUTime = d
	}
	if v, ok := given("cpus"); ok {
		if l.CPUs, err = limit.ParseCPUs(v, limit.NumCPU()); err != nil {
			return l, optionFailed("cpus", err)
		}
	}
	l.Strict = c.Bool("strict-limits")
	if l.Strict && !l.Any() {
		return l, optionFailed("strict-limits", errors.New("no limit asked for (--memory, --pids, --cpu-time or --cpus)"))
	}
	return l, nil
}

// prepare is run.PrepareRun, or its variant for package initialisation.
func prepare() *run.Prepared {
	if inInit {
		return run.PrepareRunInInit()
	}
	return run.PrepareRun()
}
