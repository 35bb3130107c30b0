package main

import (
	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/status"
)

var timeoutCommand = &cli.Command{
	Name:      runcmd.TimeoutCommand,
	Usage:     "GNU timeout's syntax, with containment: contain timeout 30 make test",
	ArgsUsage: "DURATION COMMAND [ARG...]",
	Description: `Runs COMMAND as contain run -t DURATION does: GNU timeout's syntax, so that
"timeout 30 make test" becomes "contain timeout 30 make test", and what
COMMAND starts is timed out and ended with it.

DURATION is a number with an optional unit s, m, h or d (0: no timeout).
The options are contain run's, GNU timeout's among them in every form GNU
timeout accepts (-k 5, -k5, --kill-after=5, -s KILL, -sKILL, -v, -p, -f).

Exit status: as GNU timeout's and contain run's: 124 if COMMAND timed out;
137 if it had to be killed after --kill-after; 125 if contain failed; 126
if COMMAND cannot be executed; 127 if it was not found; else COMMAND's own.`,
	Flags:           timeoutFlags(),
	SkipFlagParsing: true,
	Action:          doTimeout,
	HideHelpCommand: true,
}

// doTimeout runs contain timeout from urfave/cli, which, for contain
// itself, is only ever for help: internal/earlyrun (main on Windows) runs
// it before.
func doTimeout(c *cli.Context) error {
	code, ok := runcmd.Main(append([]string{"contain", runcmd.TimeoutCommand}, c.Args().Slice()...), nil, c.App.Writer, c.App.ErrWriter)
	if !ok {
		return cli.ShowCommandHelp(c, runcmd.TimeoutCommand)
	}
	if code != 0 {
		return &status.Error{Code: code}
	}
	return nil
}

// timeoutFlags are contain run's flags but --timeout, which contain timeout
// takes as DURATION (and refuses as an option).
func timeoutFlags() []cli.Flag {
	var flags []cli.Flag
	for _, f := range runFlags() {
		if f.Names()[0] != "timeout" {
			flags = append(flags, f)
		}
	}
	return flags
}
