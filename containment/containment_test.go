package containment

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunArgs: a Group's options are contain run's, checked as contain run
// checks them.
func TestRunArgs(t *testing.T) {
	got, err := runArgs(Options{Grace: 1500 * time.Millisecond, Timeout: time.Minute, Signal: syscall.SIGINT,
		KillAfter: 5 * time.Second, Limits: Limits{Memory: 64 << 20, Pids: 50, Strict: true}, AllowDaemons: true, Verbose: true}, "MYTOOL")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--originator", "MYTOOL", "--grace", "1.5s", "--timeout", "60s", "--kill-after", "5s",
		"--signal", "2", "--memory", "67108864", "--pids", "50", "--strict-limits", "--allow-daemons", "--verbose"}
	if !slices.Equal(got, want) {
		t.Errorf("runArgs:\n got %q\nwant %q", got, want)
	}
	for _, bad := range []Options{
		{Grace: -time.Second},
		{Limits: Limits{Memory: 10}},
		{Limits: Limits{Pids: -1}},
		{Limits: Limits{CPUs: -2}},
		{Limits: Limits{Strict: true}},
	} {
		if _, err := runArgs(bad, "T"); err == nil {
			t.Errorf("runArgs(%+v) took it", bad)
		}
	}
	if _, err := NewGroup(Options{Originator: "no spaces"}); err == nil {
		t.Error("NewGroup took the originator \"no spaces\"")
	}
}

// TestStartRefuses: what a Group cannot start is refused before anything
// runs, with an error for errors.Is.
func TestStartRefuses(t *testing.T) {
	g, err := NewGroup(Options{Originator: "T"})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	extra := exec.Command(self, "-test.run=^$")
	extra.ExtraFiles = []*os.File{os.Stdin}
	if err := g.Start(extra); !errors.Is(err, ErrExtraFiles) {
		t.Errorf("Start with ExtraFiles: %v, want ErrExtraFiles", err)
	}
	missing := exec.Command("contain-no-such-command")
	if err := g.Start(missing); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Start of a command not found: %v, want exec.ErrNotFound", err)
	}
	if _, err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(exec.Command(self, "-test.run=^$")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// TestLines: the copy's lines reach the program whole, each with its kind.
func TestLines(t *testing.T) {
	var b strings.Builder
	l := &lineWriter{w: &b}
	l.prefixed("log ").Write([]byte("contain: one\ncontain: two\n"))
	l.prefixed("pid ").Write([]byte("123\n"))
	if got, want := b.String(), "log contain: one\nlog contain: two\npid 123\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
