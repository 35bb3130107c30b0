package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

func TestExitStatusTable(t *testing.T) {
	cases := []struct {
		name     string
		res      Result
		preserve bool
		want     int
	}{
		{"exit 0", Result{Exited: true}, false, 0},
		{"exit 3", Result{Exited: true, Code: 3}, false, 3},
		{"killed by TERM", Result{Signaled: true, Signal: syscall.SIGTERM}, false, 143},
		{"killed by KILL, no timeout", Result{Signaled: true, Signal: syscall.SIGKILL}, false, 137},
		{"timeout, ended on TERM", Result{Signaled: true, Signal: syscall.SIGTERM, TimedOut: true}, false, 124},
		{"timeout, exited 0", Result{Exited: true, TimedOut: true}, false, 124},
		{"timeout, KILL after", Result{Signaled: true, Signal: syscall.SIGKILL, TimedOut: true}, false, 137},
		{"timeout, preserve, TERM", Result{Signaled: true, Signal: syscall.SIGTERM, TimedOut: true}, true, 143},
		{"timeout, preserve, exit 7", Result{Exited: true, Code: 7, TimedOut: true}, true, 7},
		{"timeout, preserve, KILL", Result{Signaled: true, Signal: syscall.SIGKILL, TimedOut: true}, true, 137},
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
		{&StartError{Name: "x", Err: exec.ErrNotFound}, 127},
		{&StartError{Name: "x", Err: &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.ENOENT}}, 127},
		{&StartError{Name: "x", Err: &os.PathError{Op: "fork/exec", Path: "x", Err: syscall.EACCES}}, 126},
		{&StartError{Name: "x", Err: syscall.ENOEXEC}, 126},
		{fmt.Errorf("cgroup: %w", syscall.ENOENT), 125},
		{fmt.Errorf("contain run: %w", proc.ErrUnsupported), 125},
		{errors.New("anything else"), 125},
	}
	for _, c := range cases {
		if got := startStatus(c.err); got != c.want {
			t.Errorf("startStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
