package main

import "github.com/urfave/cli/v2"

// urfave/cli v2 recomputes a flag's names with a regular expression on
// every lookup, and looks flags up O(n²) times while parsing: a tenth of
// the CPU time of `contain run -- true`. These wrappers compute the names
// once; everything else is the library's own flag.

type stringFlag struct {
	*cli.StringFlag
	names []string
}

func (f *stringFlag) Names() []string { return f.names }

func newStringFlag(f *cli.StringFlag) cli.Flag {
	return &stringFlag{f, append([]string{f.Name}, f.Aliases...)}
}

type boolFlag struct {
	*cli.BoolFlag
	names []string
}

func (f *boolFlag) Names() []string { return f.names }

func newBoolFlag(f *cli.BoolFlag) cli.Flag {
	return &boolFlag{f, append([]string{f.Name}, f.Aliases...)}
}
