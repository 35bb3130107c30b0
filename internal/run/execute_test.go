package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/limit"
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

// TestSpecCheck: the rules both faces share refuse what contain run
// refuses, naming the option, and take what it takes.
func TestSpecCheck(t *testing.T) {
	ok := []Spec{
		{Args: []string{"true"}},
		{Args: nil, Tool: "T", Grace: time.Second}, // the library's, before a command
		{Args: []string{"x"}, Timeout: time.Second, KillAfter: time.Second, Signal: 0, PreserveStatus: true},
		{Args: []string{"x"}, Limits: limit.Set{Memory: 64 << 20, Pids: 5, CPUTime: time.Second, Strict: true}},
		{Args: []string{"x"}, Detach: true},
		{Args: []string{"x"}, OnTimeout: "echo hi"},
	}
	for _, s := range ok {
		if err := s.Check(); err != nil {
			t.Errorf("Check(%+v) = %v", s, err)
		}
	}
	bad := []struct {
		s      Spec
		option string
	}{
		{Spec{Args: []string{}}, ""},
		{Spec{Args: []string{"x"}, Tool: "a b"}, "originator"},
		{Spec{Args: []string{"x"}, Timeout: -1}, "timeout"},
		{Spec{Args: []string{"x"}, Grace: -1}, "grace"},
		{Spec{Args: []string{"x"}, Signal: 300}, "signal"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{Memory: 10}}, "memory"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{Pids: -1}}, "pids"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{Pids: limit.MaxPids + 1}}, "pids"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{CPUTime: time.Millisecond}}, "cpu-time"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{CPUs: 0.001}}, "cpus"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{CPUs: 1e6}}, "cpus"},
		{Spec{Args: []string{"x"}, Limits: limit.Set{Strict: true}}, "strict-limits"},
		{Spec{Args: []string{"x"}, OnTimeout: "  "}, "on-timeout"},
		{Spec{Args: []string{"x"}, Detach: true, Timeout: time.Second}, ""},
		{Spec{Args: []string{"x"}, Detach: true, Limits: limit.Set{Pids: 3}}, ""},
		{Spec{Args: []string{"x"}, Detach: true, AllowDaemons: true}, ""},
	}
	for _, c := range bad {
		err := c.s.Check()
		var se *SpecError
		switch {
		case err == nil:
			t.Errorf("Check(%+v) took it", c.s)
		case c.option != "" && (!errors.As(err, &se) || se.Option != c.option):
			t.Errorf("Check(%+v) = %v, want it to name --%s", c.s, err, c.option)
		}
	}
}
