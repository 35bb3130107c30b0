package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/platform"
	"github.com/contain-cli/contain/tag"
)

// Exit statuses of contain run, as GNU timeout's.
const (
	exitTimedOut    = 124
	exitFailed      = 125
	exitCannotExec  = 126
	exitNotFound    = 127
	exitKilledAfter = 128 + 9
)

var runCommand = &cli.Command{
	Name:      "run",
	Usage:     "run COMMAND in a kill-on-close group",
	ArgsUsage: "[--] COMMAND [ARG...]",
	Description: `Runs COMMAND with stdin, stdout, stderr and the working directory passed
through, tagged with RUNNING_PROCESS_ORIGINATOR=TOOL:PID (PID: this contain).
When COMMAND exits, on timeout, or when contain is told to stop (INT, TERM,
HUP, QUIT), every process still in the group gets SIGTERM, then SIGKILL after
the grace period; contain returns only when nothing is left. Every signal
that would end a process, and WINCH and CONT, is forwarded to the group;
ALRM means "time out now". If contain is killed, COMMAND gets the timeout
signal and a crash guard ends the rest.

Exit status: COMMAND's own; 128+N if it was killed by signal N (contain then
ends itself with that signal, as GNU timeout does); 124 on timeout; 137 if
it had to be killed after --kill-after; 125 if contain failed; 126 if
COMMAND cannot be executed; 127 if it was not found.

On Windows the group is a kill-on-close job object, and -s takes INT
(CTRL_C_EVENT), TERM or BREAK (CTRL_BREAK_EVENT), KILL (terminate) or 0.`,
	Flags: []cli.Flag{
		newStringFlag(&cli.StringFlag{Name: "originator", Aliases: []string{"o"}, Value: "CONTAIN", EnvVars: []string{"CONTAIN_ORIGINATOR"},
			Usage: "the `TOOL` part of the tag (1-64 of A-Z a-z 0-9 _ . -)"}),
		newStringFlag(&cli.StringFlag{Name: "timeout", Aliases: []string{"t"}, Usage: "send the timeout signal after `DURATION` (0: never)"}),
		newStringFlag(&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "the timeout signal `SIG`: TERM, SIGTERM or 15"}),
		newStringFlag(&cli.StringFlag{Name: "kill-after", Aliases: []string{"k"}, Usage: "SIGKILL if still running `DURATION` after the timeout signal"}),
		newBoolFlag(&cli.BoolFlag{Name: "preserve-status", Usage: "on timeout, exit with COMMAND's own status instead of 124"}),
		newStringFlag(&cli.StringFlag{Name: "grace", Aliases: []string{"g"}, Value: "2s", Usage: "`DURATION` between SIGTERM and SIGKILL when the group is closed"}),
		newBoolFlag(&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "start COMMAND in a new session marked as a daemon, print its PID, return at once"}),
		newBoolFlag(&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say on stderr what is done"}),
		newBoolFlag(&cli.BoolFlag{Name: "foreground", Usage: "accepted for GNU timeout compatibility: COMMAND gets the terminal anyway, and containment stays on (children are timed out and killed too)"}),
	},
	OnUsageError: func(c *cli.Context, err error, _ bool) error {
		_, args := typedArgs(c)
		return &exitError{code: exitFailed, err: optionError("run", args, err)}
	},
	Action: doRun,
	// "contain run help" runs a command named help.
	HideHelpCommand: true,
}

// runFailed is an error of contain itself: status 125.
func runFailed(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

func doRun(c *cli.Context) error {
	return runWith(c, c.Args().Slice(), c.App.Writer, c.App.ErrWriter)
}

// flagValues is what runWith reads of the parsed options: a *cli.Context,
// or a flagSetValues on the fast path.
type flagValues interface {
	String(name string) string
	Bool(name string) bool
	IsSet(name string) bool
}

// runWith runs `contain run` with its options parsed and args the COMMAND.
func runWith(c flagValues, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return runFailed("run: missing COMMAND (usage: contain run [OPTIONS] [--] COMMAND [ARG...])")
	}
	tool := c.String("originator")
	if err := tag.ValidateTool(tool); err != nil {
		return runFailed("--originator: %v", err)
	}
	opts := platform.RunOptions{Args: args, Detach: c.Bool("detach")}
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"timeout", &opts.Timeout}, {"kill-after", &opts.KillAfter}, {"grace", &opts.Grace}} {
		if !c.IsSet(d.flag) && c.String(d.flag) == "" {
			continue
		}
		v, err := parseDuration(c.String(d.flag))
		if err != nil {
			return runFailed("--%s: %v", d.flag, err)
		}
		*d.dst = v
	}
	sig, err := platform.ParseSignal(c.String("signal"))
	if err != nil {
		return runFailed("--signal: %v", err)
	}
	opts.Signal = sig
	if opts.Detach && (opts.Timeout > 0 || c.IsSet("kill-after") || c.Bool("preserve-status")) {
		return runFailed("--detach cannot be combined with --timeout, --kill-after or --preserve-status")
	}

	opts.Tag = tag.Format(tool, os.Getpid())
	env := tag.SetEnv(os.Environ(), tag.Var, opts.Tag)
	daemon := ""
	if opts.Detach {
		daemon = "1"
	}
	opts.Env = tag.SetEnv(env, tag.DaemonVar, daemon)
	if c.Bool("verbose") {
		opts.Log = func(format string, args ...any) {
			fmt.Fprintf(stderr, "contain: "+format+"\n", args...)
		}
	}

	res, err := platform.Run(opts)
	if err != nil {
		return &exitError{code: startStatus(err), err: err}
	}
	if opts.Detach {
		fmt.Fprintln(stdout, res.Pid)
		return nil
	}
	if res.Signaled && !res.TimedOut {
		endSignal = res.Signal
	}
	if code := exitStatus(res, c.Bool("preserve-status")); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// fastRun runs `contain run ...` without urfave/cli's per-command
// machinery, which is a tenth of the start-up of `contain run -- true`: the
// options are parsed by the standard flag package into a flag set that
// runCommand's own flags define (so the two paths cannot disagree). Help,
// and anything else the fast path does not know, takes the normal path:
// ok is false then.
func fastRun(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) < 2 || args[1] != "run" {
		return 0, false
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range runCommand.Flags {
		if f == cli.HelpFlag {
			continue // urfave/cli adds it once it has run; help is its job
		}
		if err := f.Apply(fs); err != nil {
			return 0, false
		}
	}
	if err := fs.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return exitCode(&exitError{code: exitFailed, err: optionError("run", args[2:], err)}, stderr), true
	}
	return exitCode(runWith(flagSetValues{fs}, fs.Args(), stdout, stderr), stderr), true
}

// flagSetValues reads options from a parsed flag set, as a cli.Context
// would. Each name of a flag is its own entry in the set: the value is the
// one given under any of them; IsSet is true for a flag given under any of
// its names, or taken from the environment.
type flagSetValues struct{ fs *flag.FlagSet }

// lookup finds the entry of name's flag that was given, else name's own.
func (v flagSetValues) lookup(name string) (f *flag.Flag, given bool) {
	for _, cf := range runCommand.Flags {
		names := cf.Names()
		if !slices.Contains(names, name) {
			continue
		}
		v.fs.Visit(func(g *flag.Flag) {
			if slices.Contains(names, g.Name) {
				f = g
			}
		})
		if f != nil {
			return f, true
		}
		return v.fs.Lookup(name), cf.IsSet()
	}
	return v.fs.Lookup(name), false
}

func (v flagSetValues) String(name string) string {
	f, _ := v.lookup(name)
	return f.Value.String()
}

func (v flagSetValues) Bool(name string) bool {
	f, _ := v.lookup(name)
	b, _ := f.Value.(flag.Getter).Get().(bool)
	return b
}

func (v flagSetValues) IsSet(name string) bool {
	_, given := v.lookup(name)
	return given
}

// exitStatus maps how COMMAND ended to contain's status, as GNU timeout
// does: on timeout 124, unless COMMAND had to be killed with SIGKILL (137)
// or --preserve-status asks for COMMAND's own status.
func exitStatus(res platform.Result, preserve bool) int {
	code := res.Code
	if res.Signaled {
		code = 128 + int(res.Signal)
		if res.TimedOut && res.Signal == syscall.SIGKILL {
			return exitKilledAfter
		}
	}
	if res.TimedOut && !preserve {
		return exitTimedOut
	}
	return code
}

// startStatus is 127 when COMMAND was not found, 126 when it was found but
// could not be executed, 125 when contain itself failed.
func startStatus(err error) int {
	var se *platform.StartError
	if !errors.As(err, &se) {
		return exitFailed
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExec
}
