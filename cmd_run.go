package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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
the grace period; contain returns only when nothing is left.

Exit status: COMMAND's own; 128+N if it was killed by signal N; 124 on
timeout; 137 if it had to be killed after --kill-after; 125 if contain
failed; 126 if COMMAND cannot be executed; 127 if it was not found.`,
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
	},
	OnUsageError: func(_ *cli.Context, err error, _ bool) error {
		return &exitError{code: exitFailed, err: err}
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
	args := c.Args().Slice()
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

	env := tag.SetEnv(os.Environ(), tag.Var, tag.Format(tool, os.Getpid()))
	daemon := ""
	if opts.Detach {
		daemon = "1"
	}
	opts.Env = tag.SetEnv(env, tag.DaemonVar, daemon)
	if c.Bool("verbose") {
		stderr := c.App.ErrWriter
		opts.Log = func(format string, args ...any) {
			fmt.Fprintf(stderr, "contain: "+format+"\n", args...)
		}
	}

	res, err := platform.Run(opts)
	if err != nil {
		return &exitError{code: startStatus(err), err: err}
	}
	if opts.Detach {
		fmt.Fprintln(c.App.Writer, res.Pid)
		return nil
	}
	if code := exitStatus(res, c.Bool("preserve-status")); code != 0 {
		return &exitError{code: code}
	}
	return nil
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
