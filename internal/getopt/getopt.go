// Package getopt reads a command's options as GNU getopt_long reads them,
// for every command of contain: contain run and contain timeout (which stop
// at COMMAND, as GNU timeout's "+" option string does) and ps, reap, stop,
// wait and completion (whose options may follow their arguments, as GNU's
// own tools permit).
//
// The forms it takes:
//
//   - short options alone (-t 5), with their value attached (-t5, -sKILL),
//     and bundled (-vt 5, -vt5, -nv);
//   - long options with the value after "=" (--kill-after=5) or as the next
//     argument (--kill-after 5), and abbreviated to any prefix that names
//     one option (--kill=5, --orph); a prefix that names several is refused
//     as ambiguous, as getopt_long does;
//   - "--" ends the options; "-" alone is an argument.
//
// Beyond getopt_long, as Go's flag package (and so urfave/cli) reads them:
// a whole long name after one dash (-timeout 5, -verbose), a value after
// "=" to a short option (-t=5), and a true or false value given to an
// on/off option (--verbose=false).
package getopt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/contain-cli/contain/internal/text"
)

// Option is one option: its names (one letter: a short name; longer: a long
// one), and whether it is on/off (Bool) or takes a value.
type Option struct {
	Names []string
	Bool  bool
}

// Name is the option's first name, the one it is known by.
func (o *Option) Name() string { return o.Names[0] }

// Given is one option as the command line gave it: the option, and its
// value ("true" or "false" for an on/off option).
type Given struct {
	Option *Option
	Value  string
}

// SyntaxError is an option refused as getopt_long would refuse it.
type SyntaxError struct{ Say string }

func (e *SyntaxError) Error() string { return e.Say }

// Mode says where the options end.
type Mode int

const (
	// Leading: at the first argument that is not an option (COMMAND's
	// own options stay COMMAND's), as GNU timeout reads its own.
	Leading Mode = iota
	// Anywhere: options may come between and after the arguments, as
	// getopt_long permutes them for GNU's other tools; "--" still ends
	// them.
	Anywhere
)

// Parse reads args against opts, in order, and returns the options given
// and the arguments that are not options.
func Parse(opts []*Option, args []string, mode Mode) (given []Given, rest []string, err error) {
	p := parser{opts: opts}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return p.given, append(rest, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			if mode == Leading {
				return p.given, append(rest, args[i:]...), nil
			}
			rest = append(rest, a)
			continue
		}
		if a[1] == '-' {
			i, err = p.long(args, i, a[2:], "--")
		} else if name, _, _ := strings.Cut(a[1:], "="); len(name) > 1 && p.exact(name) != nil {
			i, err = p.long(args, i, a[1:], "-")
		} else {
			i, err = p.short(args, i)
		}
		if err != nil {
			return p.given, rest, err
		}
	}
	return p.given, rest, nil
}

type parser struct {
	opts  []*Option
	given []Given
}

// exact is the option whose long name is name.
func (p *parser) exact(name string) *Option {
	for _, o := range p.opts {
		for _, n := range o.Names {
			if len(n) > 1 && n == name {
				return o
			}
		}
	}
	return nil
}

// long reads the long option word (the argument args[i] without its
// dashes) and returns the index of the last argument it took.
func (p *parser) long(args []string, i int, word, dashes string) (int, error) {
	name, value, hasValue := strings.Cut(word, "=")
	typed := dashes + name
	o := p.exact(name)
	if o == nil && name != "" {
		var matches []*Option
		var spelled []string
		for _, c := range p.opts {
			for _, n := range c.Names {
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
			return i, &SyntaxError{fmt.Sprintf("option %s is ambiguous (could be %s)", text.Printable(typed), strings.Join(spelled, ", "))}
		}
	}
	if o == nil {
		return i, &SyntaxError{"unknown option " + text.Printable(typed)}
	}
	if o.Bool {
		b := true
		if hasValue {
			var err error
			if b, err = strconv.ParseBool(value); err != nil {
				return i, &SyntaxError{fmt.Sprintf("option %s takes no value (given %q)", text.Printable(typed), value)}
			}
		}
		p.given = append(p.given, Given{o, strconv.FormatBool(b)})
		return i, nil
	}
	if !hasValue {
		if i+1 >= len(args) {
			return i, &SyntaxError{"option " + text.Printable(typed) + " needs a value"}
		}
		i++
		value = args[i]
	}
	p.given = append(p.given, Given{o, value})
	return i, nil
}

// short reads args[i], one or more short options after one dash.
func (p *parser) short(args []string, i int) (int, error) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		c := a[j]
		var o *Option
		for _, cand := range p.opts {
			for _, n := range cand.Names {
				if len(n) == 1 && n[0] == c {
					o = cand
				}
			}
		}
		if o == nil {
			if j == 1 {
				return i, &SyntaxError{"unknown option " + text.Printable(a)}
			}
			return i, &SyntaxError{fmt.Sprintf("unknown option -%s in %s", text.Printable(string(a[j:j+1])), text.Printable(a))}
		}
		if o.Bool {
			p.given = append(p.given, Given{o, "true"})
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
				return i, &SyntaxError{fmt.Sprintf("option -%c needs a value", c)}
			}
			i++
			value = args[i]
		}
		p.given = append(p.given, Given{o, value})
		return i, nil
	}
	return i, nil
}
