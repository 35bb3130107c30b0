package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/platform"
)

func TestExitStatusTable(t *testing.T) {
	cases := []struct {
		name     string
		res      platform.Result
		preserve bool
		want     int
	}{
		{"exit 0", platform.Result{Exited: true}, false, 0},
		{"exit 3", platform.Result{Exited: true, Code: 3}, false, 3},
		{"killed by TERM", platform.Result{Signaled: true, Signal: syscall.SIGTERM}, false, 143},
		{"killed by KILL, no timeout", platform.Result{Signaled: true, Signal: syscall.SIGKILL}, false, 137},
		{"timeout, ended on TERM", platform.Result{Signaled: true, Signal: syscall.SIGTERM, TimedOut: true}, false, 124},
		{"timeout, exited 0", platform.Result{Exited: true, TimedOut: true}, false, 124},
		{"timeout, KILL after", platform.Result{Signaled: true, Signal: syscall.SIGKILL, TimedOut: true}, false, 137},
		{"timeout, preserve, TERM", platform.Result{Signaled: true, Signal: syscall.SIGTERM, TimedOut: true}, true, 143},
		{"timeout, preserve, exit 7", platform.Result{Exited: true, Code: 7, TimedOut: true}, true, 7},
		{"timeout, preserve, KILL", platform.Result{Signaled: true, Signal: syscall.SIGKILL, TimedOut: true}, true, 137},
	}
	for _, c := range cases {
		if got := exitStatus(c.res, c.preserve); got != c.want {
			t.Errorf("%s: exitStatus = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestStartStatus(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{&platform.StartError{Name: "x", Err: exec.ErrNotFound}, 127},
		{&platform.StartError{Name: "x", Err: &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ENOENT}}, 127},
		{&platform.StartError{Name: "x", Err: &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.EACCES}}, 126},
		{&platform.StartError{Name: "x", Err: syscall.ENOEXEC}, 126},
		{fmt.Errorf("cgroup: %w", syscall.ENOENT), 125},
		{fmt.Errorf("contain run: %w", platform.ErrUnsupported), 125},
		{errors.New("anything else"), 125},
	}
	for _, c := range cases {
		if got := startStatus(c.err); got != c.want {
			t.Errorf("startStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestFastPathMatchesCLI: contain run parses its options on a fast path
// (fastRun) and, for help, through urfave/cli; both must agree.
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
		fast, ok := fastRun(argv, &fastOut, &fastErr)
		if !ok {
			t.Fatalf("%q did not take the fast path", args)
		}
		slow := exitCode(newApp(&cliOut, &cliErr).Run(argv), &cliErr)
		if fast != slow || fastOut.String() != cliOut.String() || fastErr.String() != cliErr.String() {
			t.Errorf("%q: fast path %d %q %q, urfave/cli %d %q %q", args, fast, fastOut.String(), fastErr.String(), slow, cliOut.String(), cliErr.String())
		}
	}
	for _, help := range [][]string{{"contain", "run", "--help"}, {"contain", "run", "-h"}, {"contain", "run", "-v", "-help"}} {
		if _, ok := fastRun(help, io.Discard, io.Discard); ok {
			t.Errorf("%q took the fast path; help is urfave/cli's", help)
		}
	}
}
