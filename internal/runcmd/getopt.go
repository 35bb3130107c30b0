package runcmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/contain-cli/contain/internal/text"
)

// parsedOptions are contain run's (or contain timeout's) options as typed:
// the value of each option given, by its Options name, and the arguments
// after the last option.
type parsedOptions struct {
	value   map[string]string // given on the command line or from the environment
	given   map[string]bool   // given on the command line
	fromEnv map[string]bool   // taken from the option's environment variable
	help    bool
	args    []string
	cmd     string // run or timeout
}

// optionSyntaxError is a bad option as GNU getopt_long would refuse it, in
// contain's words.
type optionSyntaxError struct{ say string }

func (e *optionSyntaxError) Error() string { return e.say }

// parseOptions reads args as GNU getopt_long reads GNU timeout's options
// ("+" in its option string: the first argument that is not an option
// ends them, so COMMAND's own options stay COMMAND's):
//
//   - short options alone (-t 5), with their value attached (-t5, -sKILL),
//     and bundled (-vt 5, -vt5, -vd);
//   - long options with the value after "=" (--kill-after=5) or as the next
//     argument (--kill-after 5), and abbreviated to any prefix that names
//     one option (--kill=5, --pre); a prefix that names several is refused
//     as ambiguous, as getopt_long does;
//   - "--" ends the options; "-" alone is an argument.
//
// Beyond getopt_long, as Go's flag package (and so contain's other
// commands) read them: a whole long name after one dash (-timeout 5,
// -verbose), a value after "=" to a short option (-t=5), and a true or
// false value given to an on/off option (--verbose=false).
func parseOptions(args []string) (parsedOptions, error) {
	p := parsedOptions{value: map[string]string{}, given: map[string]bool{}, fromEnv: map[string]bool{}}
	for _, o := range Options {
		if o.Bool {
			p.value[o.Name] = "false"
		} else {
			p.value[o.Name] = o.Value
		}
		if o.EnvVar == "" || !fromEnvironment {
			continue
		}
		// Set but empty counts as unset (CONTAIN_ORIGINATOR=).
		if v, ok := syscall.Getenv(o.EnvVar); ok && v != "" {
			if o.Bool {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return p, fmt.Errorf("%s=%s: not true or false", o.EnvVar, v)
				}
				v = strconv.FormatBool(b)
			}
			p.value[o.Name], p.fromEnv[o.Name] = v, true
		}
	}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		var err error
		if a[1] == '-' {
			i, err = p.long(args, i, a[2:], "--")
		} else if name, _, _ := strings.Cut(a[1:], "="); len(name) > 1 && exactLong(name) != nil {
			i, err = p.long(args, i, a[1:], "-")
		} else {
			i, err = p.short(args, i)
		}
		if err != nil {
			return p, err
		}
	}
	p.args = args[i:]
	return p, nil
}

// helpOption is -h and --help: help is urfave/cli's to show.
var helpOption = Option{Name: "help", Aliases: []string{"h"}, Bool: true}

// allOptions are Options and help.
func allOptions() []*Option {
	all := make([]*Option, 0, len(Options)+1)
	for i := range Options {
		all = append(all, &Options[i])
	}
	return append(all, &helpOption)
}

// exactLong is the option whose long name (or long alias) is name.
func exactLong(name string) *Option {
	for _, o := range allOptions() {
		for _, n := range o.Names() {
			if len(n) > 1 && n == name {
				return o
			}
		}
	}
	return nil
}

// long reads the long option word (the argument args[i] without its
// dashes) and returns the index of the last argument it took.
func (p *parsedOptions) long(args []string, i int, word, dashes string) (int, error) {
	name, value, hasValue := strings.Cut(word, "=")
	typed := dashes + name
	o := exactLong(name)
	if o == nil && name != "" {
		var matches []*Option
		var spelled []string
		for _, c := range allOptions() {
			for _, n := range c.Names() {
				if len(n) > 1 && strings.HasPrefix(n, name) && !slices.Contains(matches, c) {
					matches = append(matches, c)
					spelled = append(spelled, "--"+n)
				}
			}
		}
		// Names of one option (--pids, --pids-limit) are one match.
		switch {
		case len(matches) == 1:
			o = matches[0]
		case len(matches) > 1:
			return i, &optionSyntaxError{fmt.Sprintf("option %s is ambiguous (could be %s)", text.Printable(typed), strings.Join(spelled, ", "))}
		}
	}
	if o == nil {
		return i, &optionSyntaxError{"unknown option " + text.Printable(typed)}
	}
	if o.Bool {
		b := true
		if hasValue {
			var err error
			if b, err = strconv.ParseBool(value); err != nil {
				return i, &optionSyntaxError{fmt.Sprintf("option %s takes no value (given %q)", text.Printable(typed), value)}
			}
		}
		p.set(o, strconv.FormatBool(b))
		return i, nil
	}
	if !hasValue {
		if i+1 >= len(args) {
			return i, &optionSyntaxError{"option " + text.Printable(typed) + " needs a value"}
		}
		i++
		value = args[i]
	}
	p.set(o, value)
	return i, nil
}

// short reads args[i], one or more short options after one dash.
func (p *parsedOptions) short(args []string, i int) (int, error) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		c := a[j]
		var o *Option
		for _, cand := range allOptions() {
			for _, n := range cand.Names() {
				if len(n) == 1 && n[0] == c {
					o = cand
				}
			}
		}
		if o == nil {
			if j == 1 {
				return i, &optionSyntaxError{"unknown option " + text.Printable(a)}
			}
			return i, &optionSyntaxError{fmt.Sprintf("unknown option -%s in %s", text.Printable(string(a[j:j+1])), text.Printable(a))}
		}
		if o.Bool {
			p.set(o, "true")
			continue
		}
		value := a[j+1:]
		if j == 1 && strings.HasPrefix(value, "=") {
			// -t=5, as Go's flag package reads it: "=5" is no value
			// of any option that has a letter.
			value = value[1:]
		}
		if j+1 == len(a) {
			if i+1 >= len(args) {
				return i, &optionSyntaxError{fmt.Sprintf("option -%c needs a value", c)}
			}
			i++
			value = args[i]
		}
		p.set(o, value)
		return i, nil
	}
	return i, nil
}

func (p *parsedOptions) set(o *Option, value string) {
	if o == &helpOption {
		p.help = value == "true"
		return
	}
	p.value[o.Name], p.given[o.Name] = value, true
}

// String is the value of the option named name (its Options name).
func (p parsedOptions) String(name string) string { return p.value[name] }

// Bool is the on/off option named name.
func (p parsedOptions) Bool(name string) bool { return p.value[name] == "true" }

// IsSet reports whether the option named name was given, on the command
// line or by its environment variable.
func (p parsedOptions) IsSet(name string) bool { return p.given[name] || p.fromEnv[name] }

// TimeoutCommand is contain timeout: GNU timeout's syntax, DURATION first
// and then COMMAND, with contain run's containment and options.
const TimeoutCommand = "timeout"

// timeoutDuration takes contain timeout's DURATION, the first argument
// after the options, as the value of --timeout.
func timeoutDuration(p *parsedOptions) error {
	if p.given["timeout"] {
		return runFailed("timeout: the duration is given as DURATION, not with -t or --timeout (usage: contain timeout [OPTIONS] DURATION COMMAND [ARG...])")
	}
	if len(p.args) == 0 {
		return runFailed("timeout: missing DURATION and COMMAND (usage: contain timeout [OPTIONS] DURATION COMMAND [ARG...])")
	}
	if _, err := parseDuration(p.args[0]); err != nil {
		return runFailed("timeout: DURATION: %v", err)
	}
	if len(p.args) == 1 {
		return runFailed("timeout: missing COMMAND after DURATION %s (usage: contain timeout [OPTIONS] DURATION COMMAND [ARG...])", text.Printable(p.args[0]))
	}
	p.value["timeout"], p.given["timeout"] = p.args[0], true
	p.args = p.args[1:]
	return nil
}

// timeoutHabit adds a hint to err, COMMAND not found, where COMMAND is a
// duration: contain run 5 sleep 10 is GNU timeout's habit.
func timeoutHabit(err error, args []string) error {
	if _, derr := parseDuration(args[0]); derr != nil {
		return err
	}
	rest := make([]string, len(args)-1)
	for i, a := range args[1:] {
		rest[i] = text.Printable(a)
	}
	d := text.Printable(args[0])
	return fmt.Errorf("%w (did you mean contain run -t %s -- %s, or contain timeout %s %s?)", err, d, strings.Join(rest, " "), d, strings.Join(rest, " "))
}
