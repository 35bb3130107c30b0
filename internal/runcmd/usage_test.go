package runcmd

import (
	"errors"
	"testing"
)

// TestOptionError: Go's flag package's errors in contain's words, the
// option named as typed; anything else is left as it is.
func TestOptionError(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		err  string
		want string
	}{
		{"run", []string{"-v", "--bogus=1", "--", "true"}, "flag provided but not defined: -bogus",
			"run: unknown option --bogus (see contain run --help)"},
		{"run", []string{"--", "-bogus"}, "flag provided but not defined: -bogus",
			"run: unknown option --bogus (see contain run --help)"}, // not typed as an option: named as help does
		{"ps", []string{"-x"}, "flag provided but not defined: -x", "ps: unknown option -x (see contain ps --help)"},
		{"reap", []string{"-\x1b[2J"}, "flag provided but not defined: -\x1b[2J",
			`reap: unknown option -\x1b[2J (see contain reap --help)`},
		{"reap", []string{"-g"}, "flag needs an argument: -g", "reap: option -g needs a value (see contain reap --help)"},
		{"reap", []string{"--dry-run=maybe"}, `invalid boolean value "maybe" for -dry-run: parse error`,
			`reap: option --dry-run takes no value (given "maybe") (see contain reap --help)`},
		{"", []string{"---x"}, "bad flag syntax: ---x", `bad option syntax "---x" (see contain --help)`},
		{"reap", nil, "Cannot use two forms of the same flag: s signal",
			"reap: -s and --signal are the same option: give it once (see contain reap --help)"},
		{"ps", nil, `--format: "xml" is not table or json`, `--format: "xml" is not table or json`},
	} {
		if got := OptionError(c.cmd, c.args, errors.New(c.err)).Error(); got != c.want {
			t.Errorf("%q: %q, want %q", c.err, got, c.want)
		}
	}
}
