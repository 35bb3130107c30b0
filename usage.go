package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// Go's flag package, under urfave/cli and contain run's fast path, names a
// bad option with one dash whatever was typed ("flag provided but not
// defined: -bogus" for --bogus). optionError says it in contain's words:
// the option as it was typed, and where to read about the options.
// The group named o is the option's name.
var flagErrors = []struct {
	re  *regexp.Regexp
	say func(opt string, m []string) string
}{
	{regexp.MustCompile(`(?s)^flag provided but not defined: -(?P<o>.*)$`),
		func(opt string, _ []string) string { return "unknown option " + opt }},
	{regexp.MustCompile(`(?s)^flag needs an argument: -(?P<o>.*)$`),
		func(opt string, _ []string) string { return "option " + opt + " needs a value" }},
	{regexp.MustCompile(`(?s)^invalid boolean value (".*") for -(?P<o>.*?): .*$`),
		func(opt string, m []string) string {
			return fmt.Sprintf("option %s takes no value (given %s)", opt, m[1])
		}},
	{regexp.MustCompile(`(?s)^invalid value (".*") for flag -(?P<o>.*?): (.*)$`),
		func(opt string, m []string) string { return fmt.Sprintf("%s: invalid value %s: %s", opt, m[1], m[3]) }},
	{regexp.MustCompile(`(?s)^bad flag syntax: (.*)$`),
		func(_ string, m []string) string { return fmt.Sprintf("bad option syntax %q", m[1]) }},
	// urfave/cli's, for an option given under two of its names.
	{regexp.MustCompile(`^Cannot use two forms of the same flag: (\S+) (\S+)$`),
		func(_ string, m []string) string {
			return fmt.Sprintf("%s and %s are the same option: give it once", dashed(m[1]), dashed(m[2]))
		}},
}

// optionError rewrites err, an error of parsing the options args of
// command cmd ("" for contain's own), in contain's words. Other errors are
// returned as they are.
func optionError(cmd string, args []string, err error) error {
	msg := err.Error()
	for _, fe := range flagErrors {
		m := fe.re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		opt := ""
		if i := fe.re.SubexpIndex("o"); i > 0 {
			opt = typedOption(args, m[i])
		}
		help := "contain --help"
		prefix := ""
		if cmd != "" {
			help = "contain " + cmd + " --help"
			prefix = cmd + ": "
		}
		return fmt.Errorf("%s%s (see %s)", prefix, fe.say(opt, m), help)
	}
	return err
}

// typedOption finds how the option name was typed in args (-o, --o,
// -originator or --originator all name it for Go's flag package). Not
// found, it is named as the help names it.
func typedOption(args []string, name string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		opt, _, _ := strings.Cut(a, "=")
		if strings.TrimPrefix(strings.TrimPrefix(opt, "-"), "-") == name {
			return printable(opt)
		}
	}
	return dashed(name)
}

// dashed writes an option name as help does: -o, --originator.
func dashed(name string) string {
	if len([]rune(name)) == 1 {
		return "-" + printable(name)
	}
	return "--" + printable(name)
}

// usageError turns a bad option of a command (or of contain itself) into
// status 2 and one line that names the option as typed.
func usageError(c *cli.Context, err error, _ bool) error {
	cmd, args := typedArgs(c)
	return &exitError{code: 2, err: optionError(cmd, args, err)}
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
