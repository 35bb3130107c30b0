package runcmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/contain-cli/contain/internal/text"
)

// OptionError rewrites err, an error of parsing the options args of
// command cmd ("" for contain's own), in contain's words. Go's flag
// package, under urfave/cli and contain run's fast path, names a bad option
// with one dash whatever was typed ("flag provided but not defined: -bogus"
// for --bogus); contain names it as it was typed and says where to read
// about the options. Other errors are returned as they are. (Plain string
// matching: regular expressions compiled at start-up would cost every
// contain run.)
func OptionError(cmd string, args []string, err error) error {
	say := flagErrorWords(args, err.Error())
	if say == "" {
		return err
	}
	if cmd == "" {
		return fmt.Errorf("%s (see contain --help)", say)
	}
	return fmt.Errorf("%s: %s (see contain %s --help)", cmd, say, cmd)
}

// flagErrorWords says msg, an error of the flag package or urfave/cli, in
// contain's words; "" if it is neither's.
func flagErrorWords(args []string, msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown option " + typedOption(args, name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "option " + typedOption(args, name) + " needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		// "VALUE" for -NAME: ERR
		if value, name, _, ok := valueNameErr(rest, " for -"); ok {
			return fmt.Sprintf("option %s takes no value (given %s)", typedOption(args, name), value)
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		// "VALUE" for flag -NAME: ERR
		if value, name, why, ok := valueNameErr(rest, " for flag -"); ok {
			return fmt.Sprintf("%s: invalid value %s: %s", typedOption(args, name), value, why)
		}
	}
	if s, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Sprintf("bad option syntax %q", s)
	}
	// urfave/cli's, for an option given under two of its names.
	if names, ok := strings.CutPrefix(msg, "Cannot use two forms of the same flag: "); ok {
		if a, b, ok := strings.Cut(names, " "); ok {
			return fmt.Sprintf("%s and %s are the same option: give it once", dashed(a), dashed(b))
		}
	}
	return ""
}

// valueNameErr splits `"VALUE"` + sep + `NAME: ERR`.
func valueNameErr(s, sep string) (value, name, why string, ok bool) {
	value, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", "", false
	}
	rest, ok := strings.CutPrefix(s[len(value):], sep)
	if !ok {
		return "", "", "", false
	}
	name, why, ok = strings.Cut(rest, ": ")
	return value, name, why, ok
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
			return text.Printable(opt)
		}
	}
	return dashed(name)
}

// dashed writes an option name as help does: -o, --originator.
func dashed(name string) string {
	if len([]rune(name)) == 1 {
		return "-" + text.Printable(name)
	}
	return "--" + text.Printable(name)
}
