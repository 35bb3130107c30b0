package main

import (
	"flag"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli v2 recomputes a flag's names with a regular expression on
// every lookup, and looks flags up O(n²) times while parsing: a tenth of
// the CPU time of `contain run -- true`. These wrappers compute the names
// once; everything else is the library's own flag.

type stringFlag struct {
	*cli.StringFlag
	names []string
}

func (f *stringFlag) Names() []string { return f.names }

// Apply treats an environment variable that is set but empty as unset
// (CONTAIN_ORIGINATOR= means the default, as for most tools), where
// urfave/cli would take the empty value.
func (f *stringFlag) Apply(set *flag.FlagSet) error {
	if len(f.EnvVars) == 0 || slices.ContainsFunc(f.EnvVars, func(v string) bool { return os.Getenv(v) != "" }) {
		return f.StringFlag.Apply(set)
	}
	g := *f.StringFlag
	g.EnvVars = nil
	return g.Apply(set)
}

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

// listFlag is an option that is repeated for more values (-o A -o B). Each
// value is taken as typed: unlike cli.StringSliceFlag's, it is never split
// at commas (a TOOL may contain one) nor trimmed (a value with spaces is
// refused, not quietly changed). Its names may be mixed (-o A --originator
// B). Read it with listValues; help shows the StringSliceFlag it wraps.
type listFlag struct {
	*cli.StringSliceFlag
	names []string
}

// Names is the first name only, for urfave/cli, which would refuse a flag
// given under two of its names and copy a value from one name to the
// others: Apply registers the one list under every name, so nothing needs
// copying. flagNames gives all of them.
func (f *listFlag) Names() []string { return f.names[:1] }

// flagNames lists every name of f, a listFlag's aliases included.
func flagNames(f cli.Flag) []string {
	if l, ok := f.(*listFlag); ok {
		return l.names
	}
	return f.Names()
}

// Apply registers a fresh, empty list under every name of the flag.
func (f *listFlag) Apply(set *flag.FlagSet) error {
	v := &stringList{}
	for _, n := range f.names {
		set.Var(v, n, f.Usage)
	}
	return nil
}

// String is the flag's line in help: as a single-valued option's, where
// urfave/cli would print its names twice to say it may be repeated (its
// usage says so in words).
func (f *listFlag) String() string {
	return cli.FlagStringer(&cli.StringFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
}

func newListFlag(f *cli.StringSliceFlag) cli.Flag {
	return &listFlag{f, append([]string{f.Name}, f.Aliases...)}
}

// stringList is the value of a listFlag: one entry per time the option
// was given.
type stringList []string

func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Get() any           { return []string(*l) }

// listValues returns the values given to the listFlag name, in order.
func listValues(c *cli.Context, name string) []string {
	l, _ := c.Value(name).([]string)
	return l
}
