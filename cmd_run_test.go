package main

import (
	"io"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/runcmd"
)

// TestFastPathMatchesCLI: contain run parses its options on a fast path
// (runcmd.Fast) and, for help, through urfave/cli; both must agree.
func TestFastPathMatchesCLI(t *testing.T) {
	cases := [][]string{
		{"run", "--", "sh", "-c", "exit 3"},
		{"run", "-o", "X_1", "--", "sh", "-c", `test "$RUNNING_PROCESS_ORIGINATOR" = "X_1:$PPID"`},
		{"run", "--originator=X_2", "sh", "-c", `test "$RUNNING_PROCESS_ORIGINATOR" = "X_2:$PPID"`},
		{"run", "-t", "0.1", "sleep", "5"},
		{"run", "--timeout", "0.1", "--preserve-status", "sleep", "5"},
		{"run", "-t", "0.1", "-s", "KILL", "sleep", "5"},
		{"run", "-t", "abc", "true"},
		{"run", "-t", "", "true"},
		{"run", "-k", "x", "true"},
		{"run", "-s", "NOPE", "true"},
		{"run", "-o", "bad name", "true"},
		{"run", "--bogus", "true"},
		{"run"},
		{"run", "-d", "-k", "1", "true"},
		{"run", "contain-no-such-command"},
	}
	for _, args := range cases {
		argv := append([]string{"contain"}, args...)
		var fastOut, fastErr, cliOut, cliErr strings.Builder
		fast, ok := runcmd.Fast(argv, &fastOut, &fastErr)
		if !ok {
			t.Fatalf("%q did not take the fast path", args)
		}
		slow := exitCode(newApp(&cliOut, &cliErr).Run(argv), &cliErr)
		if fast != slow || fastOut.String() != cliOut.String() || fastErr.String() != cliErr.String() {
			t.Errorf("%q: fast path %d %q %q, urfave/cli %d %q %q", args, fast, fastOut.String(), fastErr.String(), slow, cliOut.String(), cliErr.String())
		}
	}
	for _, help := range [][]string{{"contain", "run", "--help"}, {"contain", "run", "-h"}, {"contain", "run", "-v", "-help"}} {
		if _, ok := runcmd.Fast(help, io.Discard, io.Discard); ok {
			t.Errorf("%q took the fast path; help is urfave/cli's", help)
		}
	}
}
