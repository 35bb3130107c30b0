package main

import (
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/status"
)

// TestRunThroughCLI: urfave/cli hands contain run's arguments, untouched,
// to its one parser (runcmd.Main), and shows run's help for -h and
// --help, with every option of runcmd.Options.
func TestRunThroughCLI(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"run", "--", "sh", "-c", "exit 3"}, 3, ""},
		{[]string{"run", "-o", "X_1", "--", "sh", "-c", `test "$RUNNING_PROCESS_ORIGINATOR" = "X_1:$PPID"`}, 0, ""},
		{[]string{"run", "-t", "abc", "true"}, status.Failed, "contain: run: --timeout: "},
		{[]string{"run", "--bogus", "true"}, status.Failed, "contain: run: unknown option --bogus"},
		{[]string{"run", "contain-no-such-command"}, status.NotFound, "contain: cannot run contain-no-such-command"},
	} {
		argv := append([]string{"contain"}, c.args...)
		var direct, viaCLI strings.Builder
		code, ok := runcmd.Main(argv, nil, &strings.Builder{}, &direct)
		if !ok {
			t.Fatalf("%q: taken for help", c.args)
		}
		got := status.Of(newApp(&strings.Builder{}, &viaCLI).Run(argv), &viaCLI)
		if code != c.code || got != c.code || direct.String() != viaCLI.String() || !strings.HasPrefix(viaCLI.String(), c.err) {
			t.Errorf("%q: Main %d %q, through urfave/cli %d %q; want %d, %q", c.args, code, direct.String(), got, viaCLI.String(), c.code, c.err)
		}
	}
	for _, help := range [][]string{{"contain", "run", "--help"}, {"contain", "run", "-h"}, {"contain", "run", "-v", "-help"}, {"contain", "help", "run"}} {
		if _, ok := runcmd.Main(help, nil, &strings.Builder{}, &strings.Builder{}); ok && help[1] == "run" {
			t.Errorf("%q was run; it asks for help", help)
		}
		var out strings.Builder
		if code := status.Of(newApp(&out, &out).Run(help), &out); code != 0 {
			t.Errorf("%q: exit %d: %s", help, code, out.String())
		}
		for _, o := range runcmd.Options {
			if !strings.Contains(out.String(), "--"+o.Name) {
				t.Errorf("%q: help without --%s:\n%s", help, o.Name, out.String())
			}
		}
	}
}
