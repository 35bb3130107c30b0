//go:build linux || darwin

package run

import (
	"fmt"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTTY is a terminal whose foreground is a number, and whose settings
// are a termios; sets counts the settings set.
type fakeTTY struct {
	fg   int
	set  unix.Termios
	sets int
}

func (t *fakeTTY) foreground() int { return t.fg }
func (t *fakeTTY) setForeground(pgrp int) error {
	t.fg = pgrp
	return nil
}
func (t *fakeTTY) ctty() int { return 99 }
func (t *fakeTTY) settings() (*unix.Termios, error) {
	s := t.set
	return &s, nil
}
func (t *fakeTTY) setSettings(s *unix.Termios) error {
	t.set = *s
	t.sets++
	return nil
}

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
	if !j.handOver() {
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
	if tty.fg != cmd || j.stopped || !slices.Equal(*acts, []string{"group " + cont}) || !j.holds {
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
	if j.handOver() {
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

// TestJobControlEnd: what the end does to the terminal, on a fake one.
// While COMMAND's side has it, contain takes it back and, asked (a signal
// ended COMMAND), puts back the settings it found at the hand-over,
// unless they are those already. After a stop and bg the shell has it:
// contain takes neither the terminal nor its settings.
func TestJobControlEnd(t *testing.T) {
	const cmd, shell = 20, 5
	raw := unix.Termios{}
	cooked := unix.Termios{Lflag: unix.ICANON | unix.ECHO}
	shells := unix.Termios{Lflag: unix.ECHO}

	// COMMAND left the terminal raw and was killed.
	tty := &fakeTTY{fg: 10, set: cooked}
	j, _ := fakeJobs(tty, false)
	j.started(j.handOver())
	tty.fg, tty.set = cmd, raw
	j.restore()
	j.putBack()
	if tty.fg != 10 || tty.set != cooked || tty.sets != 1 {
		t.Errorf("killed in raw mode: foreground %d, settings %+v (%d set); want contain's group, %+v", tty.fg, tty.set, tty.sets, cooked)
	}

	// It had put them back itself: nothing is set.
	tty = &fakeTTY{fg: 10, set: cooked}
	j, _ = fakeJobs(tty, false)
	j.started(j.handOver())
	tty.fg = cmd
	j.restore()
	j.putBack()
	if tty.fg != 10 || tty.sets != 0 {
		t.Errorf("settings unchanged: foreground %d, %d set; want contain's group, none set", tty.fg, tty.sets)
	}

	// Ctrl-Z, then bg: the shell took the terminal and set its own
	// settings.
	bg := func() (*fakeTTY, *jobControl) {
		t.Helper()
		tty := &fakeTTY{fg: 10, set: cooked}
		j, _ := fakeJobs(tty, false)
		j.started(j.handOver())
		tty.fg, tty.set = cmd, raw
		j.commandStopped(cmd, unix.SIGTSTP)
		tty.fg, tty.set = shell, shells
		j.resumed(cmd)
		if tty.fg != shell {
			t.Errorf("bg: foreground %d, want the shell's", tty.fg)
		}
		return tty, j
	}
	// Then the end (a timeout): the shell keeps both.
	tty, j = bg()
	j.restore()
	j.putBack()
	if tty.fg != shell || tty.set != shells || tty.sets != 0 {
		t.Errorf("ended after bg: foreground %d, settings %+v (%d set); want the shell's, untouched", tty.fg, tty.set, tty.sets)
	}
	// Stopped again (SIGTTIN: it read the terminal), then fg: COMMAND
	// has the terminal again, and has it taken back at its end.
	tty, j = bg()
	j.commandStopped(cmd, unix.SIGTTIN)
	tty.fg = 10
	j.resumed(cmd)
	if tty.fg != cmd {
		t.Errorf("fg after bg: foreground %d, want COMMAND's", tty.fg)
	}
	j.restore()
	if tty.fg != 10 {
		t.Errorf("ended after bg and fg: foreground %d, want contain's group", tty.fg)
	}

	// Never handed over (contain in the background): nothing is read,
	// given, taken or set.
	tty = &fakeTTY{fg: shell, set: shells}
	j, _ = fakeJobs(tty, false)
	if j.handOver() {
		t.Error("contain in the background, yet the terminal was handed over")
	}
	j.started(false)
	j.restore()
	j.putBack()
	if tty.fg != shell || tty.sets != 0 {
		t.Errorf("never handed over: foreground %d, %d set; want the shell's, none set", tty.fg, tty.sets)
	}
}
