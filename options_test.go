package main

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryCommandTakesGetoptForms: ps, reap, stop, wait and completion
// take the forms contain run takes (bundled flags, attached values,
// --opt=value, unambiguous prefixes), and options after their arguments,
// as GNU's tools do; urfave/cli is handed one form.
func TestEveryCommandTakesGetoptForms(t *testing.T) {
	app := newApp(&strings.Builder{}, &strings.Builder{})
	for _, c := range []struct {
		args, want []string
	}{
		{[]string{"reap", "-nv"}, []string{"reap", "--dry-run=true", "--verbose=true"}},
		{[]string{"reap", "-nvsKILL", "-g1s"}, []string{"reap", "--dry-run=true", "--verbose=true", "--signal=KILL", "--grace=1s"}},
		{[]string{"ps", "-oX", "--orph"}, []string{"ps", "--originator=X", "--orphans=true"}},
		{[]string{"ps", "-o", "X", "--originator=Y", "--form", "json"}, []string{"ps", "--originator=X", "--originator=Y", "--format=json"}},
		{[]string{"stop", "-t1s", "X:1"}, []string{"stop", "--timeout=1s", "--", "X:1"}},
		{[]string{"stop", "X:1", "-t1s", "--kill", "Y:2"}, []string{"stop", "--timeout=1s", "--kill=true", "--", "X:1", "Y:2"}},
		{[]string{"wait", "--incl", "-t=5", "X:1"}, []string{"wait", "--include-daemons=true", "--timeout=5", "--", "X:1"}},
		{[]string{"stop", "--", "X:1", "-t1s"}, []string{"stop", "--", "X:1", "-t1s"}},
		{[]string{"ps", "-h"}, []string{"ps", "--help=true"}},
		{[]string{"completion", "bash"}, []string{"completion", "--", "bash"}},
		// What parses its own options, and help, is left as typed.
		{[]string{"run", "-vt1", "true"}, []string{"run", "-vt1", "true"}},
		{[]string{"timeout", "-v", "1", "true"}, []string{"timeout", "-v", "1", "true"}},
		{[]string{"help", "ps"}, []string{"help", "ps"}},
		{[]string{"--version"}, []string{"--version"}},
	} {
		got, err := typedOptions(app, append([]string{"contain"}, c.args...))
		if err != nil || !slices.Equal(got[1:], c.want) {
			t.Errorf("%q: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ps", "--o", "X"}, "contain: ps: option --o is ambiguous (could be --originator, --orphans) (see contain ps --help)\n"},
		{[]string{"reap", "-nq"}, "contain: reap: unknown option -q in -nq (see contain reap --help)\n"},
		{[]string{"stop", "X:1", "-t"}, "contain: stop: option -t needs a value (see contain stop --help)\n"},
		{[]string{"wait", "--orphans"}, "contain: wait: unknown option --orphans (see contain wait --help)\n"},
		{[]string{"ps", "--orphans=maybe"}, "contain: ps: option --orphans takes no value (given \"maybe\") (see contain ps --help)\n"},
		{[]string{"ps", "-o", "a:b"}, "contain: ps: --originator: \"a:b\" has \":\": -o takes a TOOL; TOOL:PID names a session\n"},
		{[]string{"reap", "-oX:12"}, "contain: reap: --originator: \"X:12\" has \":\": -o takes a TOOL; TOOL:PID names a session (reap --session TOOL:PID)\n"},
		{[]string{"reap", "-s", "FOO"}, "contain: reap: --signal: invalid signal \"FOO\"\n"},
		{[]string{"ps", "--format", "xml"}, "contain: ps: --format: \"xml\" is not table or json\n"},
		{nil, "contain: missing command (usage: contain run|timeout|ps|reap|stop|wait|completion|help ...; see contain --help)\n"},
	} {
		var out, errOut strings.Builder
		code := runApp(append([]string{"contain"}, c.args...), &out, &errOut)
		if code != 2 || out.Len() != 0 || errOut.String() != c.want {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 2, %q", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
}

// TestTypedFormsRun: the forms reach the command, end to end: reap -nv
// with an attached -o runs (status 0, nothing of that tool to reap)
// where it was refused with 2.
func TestTypedFormsRun(t *testing.T) {
	for _, args := range [][]string{
		{"reap", "-nv", "-oCONTAIN_TEST_NO_SUCH_TOOL"},
		{"ps", "-oCONTAIN_TEST_NO_SUCH_TOOL", "--orph"},
		{"ps", "--form=json", "-oCONTAIN_TEST_NO_SUCH_TOOL"},
	} {
		var out, errOut strings.Builder
		if code := runApp(append([]string{"contain"}, args...), &out, &errOut); code != 0 {
			t.Errorf("%q: status %d, stderr %q", args, code, errOut.String())
		}
	}
}
