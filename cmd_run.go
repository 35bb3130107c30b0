package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/status"
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
	Flags: runFlags(),
	// runcmd.Main is contain run's one option parser; the flags above are
	// for help, completion and the man page.
	SkipFlagParsing: true,
	Action:          doRun,
	// "contain run help" runs a command named help.
	HideHelpCommand: true,
}

// doRun runs contain run from urfave/cli, which, for contain itself, is
// only ever for help: internal/earlyrun (main on Windows) runs it before.
func doRun(c *cli.Context) error {
	code, ok := runcmd.Main(append([]string{"contain", "run"}, c.Args().Slice()...), nil, c.App.Writer, c.App.ErrWriter)
	if !ok {
		return cli.ShowCommandHelp(c, "run")
	}
	if code != 0 {
		return &status.Error{Code: code}
	}
	return nil
}

// runFlags are runcmd.Options as urfave/cli flags, for help, completion
// and the man page's test; urfave/cli never parses them.
func runFlags() []cli.Flag {
	var flags []cli.Flag
	for _, o := range runcmd.Options {
		var env []string
		if o.EnvVar != "" {
			env = []string{o.EnvVar}
		}
		if o.Bool {
			flags = append(flags, newBoolFlag(&cli.BoolFlag{Name: o.Name, Aliases: o.Aliases, EnvVars: env, Usage: o.Usage}))
		} else {
			flags = append(flags, newStringFlag(&cli.StringFlag{Name: o.Name, Aliases: o.Aliases, Value: o.Value, EnvVars: env, Usage: o.Usage}))
		}
	}
	return flags
}

// parseDuration reads a DURATION, as contain run does.
func parseDuration(s string) (time.Duration, error) { return runcmd.ParseDuration(s) }
