package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/getopt"
	"github.com/contain-cli/contain/internal/status"
)

// typedOptions reads the options of the commands that urfave/cli runs (ps,
// reap, stop, wait, completion) with package getopt, contain run's parser,
// so that every command takes the forms GNU tools take (reap -nv, ps -oX,
// stop -t1s, --orph, options after the sessions), and gives urfave/cli
// the one form its flag package reads: --name=value for each option, then
// "--" and the arguments. args is os.Args; contain run and timeout (which
// parse their own) and help are returned as they are.
func typedOptions(app *cli.App, args []string) ([]string, error) {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		i++ // contain's own options: --help, --version
	}
	if i >= len(args) {
		return args, nil
	}
	cmd := app.Command(args[i])
	if cmd == nil || cmd.SkipFlagParsing || cmd.Name == "help" {
		return args, nil
	}
	opts := commandOptions(cmd)
	given, rest, err := getopt.Parse(opts, args[i+1:], getopt.Anywhere)
	if err != nil {
		return nil, &status.Error{Code: 2, Err: fmt.Errorf("%s: %w (see contain %s --help)", cmd.Name, err, cmd.Name)}
	}
	out := slices.Clone(args[:i+1])
	for _, g := range given {
		out = append(out, "--"+g.Option.Name()+"="+g.Value)
	}
	if len(rest) > 0 {
		out = append(append(out, "--"), rest...)
	}
	return out, nil
}

// commandOptions are cmd's flags, and help, as package getopt's options.
func commandOptions(cmd *cli.Command) []*getopt.Option {
	opts := []*getopt.Option{{Names: []string{"help", "h"}, Bool: true}}
	for _, f := range cmd.Flags {
		opts = append(opts, &getopt.Option{Names: flagNames(f), Bool: isBoolFlag(f)})
	}
	return opts
}

// isBoolFlag: f is an on/off option, which takes no value.
func isBoolFlag(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, *boolFlag:
		return true
	}
	return false
}
