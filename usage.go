package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/status"
)

// usageError turns a bad option of a command (or of contain itself) into
// status 2 and one line that names the option as typed.
func usageError(c *cli.Context, err error, _ bool) error {
	cmd, args := typedArgs(c)
	return &status.Error{Code: 2, Err: runcmd.OptionError(cmd, args, err)}
}

// typedArgs is the command that c runs and the arguments typed after its
// name. urfave/cli keeps them in the parent's context; contain's own
// context has none, and its arguments are the process's.
func typedArgs(c *cli.Context) (cmd string, args []string) {
	if lin := c.Lineage(); len(lin) > 1 {
		if a := lin[1].Args().Slice(); len(a) > 0 {
			return c.Command.Name, a[1:]
		}
	}
	if len(os.Args) > 1 {
		return "", os.Args[1:]
	}
	return "", nil
}
