package runcmd

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/contain-cli/contain/internal/getopt"
	"github.com/contain-cli/contain/internal/text"
)

// parsedOptions are contain run's (or contain timeout's) options as typed:
// the value of each option given, by its Options name, and the arguments
// after the last option.
type parsedOptions struct {
	value   map[string]string // given on the command line or from the environment
	given   map[string]bool   // given on the command line
	fromEnv map[string]bool   // taken from the option's environment variable
	times   map[string]int    // how many times it was given (-vv: 2)
	help    bool
	args    []string
	cmd     string // run or timeout
}

// parseOptions reads args as GNU getopt_long reads GNU timeout's options
// ("+" in its option string: the first argument that is not an option
// ends them, so COMMAND's own options stay COMMAND's), with the forms
// package getopt takes for every command of contain.
func parseOptions(args []string) (parsedOptions, error) {
	p := parsedOptions{value: map[string]string{}, given: map[string]bool{}, fromEnv: map[string]bool{}, times: map[string]int{}}
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
	opts, byOpt := getoptTable()
	given, rest, err := getopt.Parse(opts, args, getopt.Leading)
	if err != nil {
		return p, err
	}
	for _, g := range given {
		p.set(byOpt[g.Option], g.Value)
	}
	p.args = rest
	return p, nil
}

// helpOption is -h and --help: help is urfave/cli's to show.
var helpOption = Option{Name: "help", Aliases: []string{"h"}, Bool: true}

// getoptTable is Options and help as package getopt's options, and the
// Option each stands for.
func getoptTable() ([]*getopt.Option, map[*getopt.Option]*Option) {
	opts := make([]*getopt.Option, 0, len(Options)+1)
	byOpt := make(map[*getopt.Option]*Option, len(Options)+1)
	add := func(o *Option) {
		g := &getopt.Option{Names: o.Names(), Bool: o.Bool}
		opts = append(opts, g)
		byOpt[g] = o
	}
	for i := range Options {
		add(&Options[i])
	}
	add(&helpOption)
	return opts, byOpt
}

func (p *parsedOptions) set(o *Option, value string) {
	if o == &helpOption {
		p.help = value == "true"
		return
	}
	p.value[o.Name], p.given[o.Name] = value, true
	if value == "false" && o.Bool {
		p.times[o.Name] = 0 // --verbose=false takes back the -v before it
	} else {
		p.times[o.Name]++
	}
}

// Times is how many times the option named name was given: -vv is 2.
func (p parsedOptions) Times(name string) int { return p.times[name] }

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
