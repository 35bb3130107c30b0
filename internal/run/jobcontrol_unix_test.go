//go:build linux || darwin

package run

import (
	"fmt"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTTY is a terminal whose foreground is a number.
type fakeTTY struct{ fg int }

func (t *fakeTTY) foreground() int { return t.fg }
func (t *fakeTTY) setForeground(pgrp int) error {
	t.fg = pgrp
	return nil
}
func (t *fakeTTY) ctty() int { return 99 }

// fakeJobs is a jobControl over a fake terminal, recording what it does.
func fakeJobs(t *fakeTTY, orphaned bool) (*jobControl, *[]string) {
	var acts []string
	j := &jobControl{own: 10, log: func(string, ...any) {},
		orphaned:    func() bool { return orphaned },
		stopSelf:    func(sig syscall.Signal) { acts = append(acts, "stop contain "+fmt.Sprint(int(sig))) },
		signalGroup: func(sig syscall.Signal) { acts = append(acts, "group "+fmt.Sprint(int(sig))) }}
	if t != nil {
		j.tty = t
	}
	return j, &acts
}

// TestJobControl: Ctrl-Z, fg, bg and the end, as a shell with job
// control sees them, and without it (an orphaned group), on a fake
// terminal: who has the foreground after each, and what was signalled.
func TestJobControl(t *testing.T) {
	const cmd = 20
	tstp, cont := fmt.Sprint(int(unix.SIGTSTP)), fmt.Sprint(int(unix.SIGCONT))

	// Ctrl-Z under job control, then fg.
	tty := &fakeTTY{fg: 10}
	j, acts := fakeJobs(tty, false)
	if !j.inForeground() {
		t.Fatal("contain has the terminal: COMMAND should start in the foreground")
	}
	j.started(true)
	tty.fg = cmd // COMMAND took it at its start
	j.commandStopped(cmd, unix.SIGTSTP)
	if tty.fg != 10 || !j.stopped || !slices.Equal(*acts, []string{"stop contain " + tstp}) {
		t.Errorf("Ctrl-Z: foreground %d, stopped %v, %q; want contain's group, stopped, contain stopped by SIGTSTP", tty.fg, j.stopped, *acts)
	}
	j.resumed(cmd) // fg: contain is in the foreground again
	if tty.fg != cmd || j.stopped || (*acts)[len(*acts)-1] != "group "+cont {
		t.Errorf("fg: foreground %d, stopped %v, %q; want COMMAND's group and SIGCONT to it", tty.fg, j.stopped, *acts)
	}
	j.restore()
	if tty.fg != 10 {
		t.Errorf("the end: foreground %d, want contain's group back", tty.fg)
	}

	// Ctrl-Z, then bg: the terminal stays the shell's.
	tty = &fakeTTY{fg: cmd}
	j, acts = fakeJobs(tty, false)
	j.started(true)
	j.commandStopped(cmd, unix.SIGTSTP)
	tty.fg = 5 // the shell took it back
	j.resumed(cmd)
	if tty.fg != 5 || (*acts)[len(*acts)-1] != "group "+cont {
		t.Errorf("bg: foreground %d, %q; want the shell's and SIGCONT to the group", tty.fg, *acts)
	}

	// Orphaned (no job control): contain does not stop; COMMAND goes on
	// with the terminal contain had.
	tty = &fakeTTY{fg: 10}
	j, acts = fakeJobs(tty, true)
	j.commandStopped(cmd, unix.SIGTSTP)
	if tty.fg != cmd || j.stopped || !slices.Equal(*acts, []string{"group " + cont}) || !j.gave {
		t.Errorf("orphaned: foreground %d, stopped %v, %q; want COMMAND's, not stopped, SIGCONT to the group", tty.fg, j.stopped, *acts)
	}
	// A plain SIGSTOP is no job control: contain stops with it.
	j, acts = fakeJobs(&fakeTTY{fg: cmd}, true)
	j.commandStopped(cmd, unix.SIGSTOP)
	if !j.stopped || len(*acts) != 1 {
		t.Errorf("SIGSTOP, orphaned: stopped %v, %q; want contain stopped", j.stopped, *acts)
	}

	// No terminal (CI, a library's copy): nothing is given or taken.
	j, acts = fakeJobs(nil, false)
	if j.inForeground() {
		t.Error("no terminal, yet in the foreground")
	}
	j.commandStopped(cmd, unix.SIGTSTP)
	j.takeBack()
	j.restore()
	if j.stopped || len(*acts) != 0 {
		t.Errorf("no terminal: stopped %v, %q; want nothing done", j.stopped, *acts)
	}
	// Never given: the end leaves the terminal alone.
	tty = &fakeTTY{fg: 7}
	j, _ = fakeJobs(tty, false)
	j.restore()
	if tty.fg != 7 {
		t.Errorf("never given, yet the end set the foreground to %d", tty.fg)
	}
}
