//go:build linux || darwin

package run

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// tty is what job control needs of a terminal: contain's controlling
// terminal (terminal), or a fake in the tests.
type tty interface {
	foreground() int // the foreground process group, or -1
	setForeground(pgrp int) error
	ctty() int // the descriptor a child makes its controlling terminal
	settings() (*unix.Termios, error)
	setSettings(*unix.Termios) error
}

// jobControl is COMMAND's share of contain's terminal, a component with
// state of its own: COMMAND's group gets the foreground at its start when
// contain has it; when COMMAND stops (Ctrl-Z) contain takes the terminal
// back and stops too, so that the shell sees its job stopped; fg gives
// it to COMMAND again; at the end contain's own group has it back, and,
// when COMMAND was ended by a signal, the settings contain found. The
// runner supplies the acts.
type jobControl struct {
	tty tty // nil: no terminal (CI, cron, a pipe), or a library's copy
	own int // contain's process group
	log Logger
	// holds: COMMAND's side has the terminal now: given at its start, at
	// fg or to go on where no shell can resume it, not taken back at a
	// stop (after which the shell has it), taken back at the end.
	holds bool
	// stopped: COMMAND is stopped (Ctrl-Z) and so is contain.
	stopped bool
	// found: the terminal's settings when contain handed it over (nil:
	// not handed over, or unreadable), put back when a signal ended
	// COMMAND (putBack).
	found *unix.Termios

	// orphaned reports whether contain's process group is orphaned (no
	// shell can resume it); stopSelf stops contain with sig; signalGroup
	// sends sig to COMMAND's group.
	orphaned    func() bool
	stopSelf    func(sig syscall.Signal)
	signalGroup func(sig syscall.Signal)
}

// handOver reports whether contain's group has the terminal: COMMAND
// then starts in the foreground (decided once, before the first try),
// and the terminal's settings are kept, before COMMAND can change them.
func (j *jobControl) handOver() bool {
	if j.tty == nil || j.tty.foreground() != j.own {
		return false
	}
	if s, err := j.tty.settings(); err == nil {
		j.found = s
	} else {
		j.log("cannot read the terminal's settings: %v (they will not be put back)", err)
	}
	return true
}

// started records that COMMAND's group took the terminal at its start.
func (j *jobControl) started(foreground bool) { j.holds = foreground }

// takeBack gives the terminal back to contain's group after a start that
// failed: the child may have taken it before its exec failed.
func (j *jobControl) takeBack() {
	if j.tty != nil {
		j.tty.setForeground(j.own)
	}
}

// commandStopped follows COMMAND (PID pid, its group's) into a stop by
// sig on a terminal: take the terminal back, then stop contain with the
// same signal, so that the shell sees its job stopped and can resume it
// with fg or bg.
//
// Under a shell without job control contain's process group is orphaned:
// the kernel discards job-control stops sent to it, and nobody would ever
// resume COMMAND. There contain does what the kernel does for an orphaned
// group: it does not stop, and lets COMMAND go on (with the terminal, when
// contain has it to give).
func (j *jobControl) commandStopped(pid int, sig syscall.Signal) {
	if j.tty == nil {
		j.log("command stopped by %s", signals.Name(sig))
		return
	}
	byJobControl := sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
	if byJobControl && j.orphaned() {
		fg := j.tty.foreground()
		if fg == j.own {
			if err := j.tty.setForeground(pid); err == nil {
				j.holds, fg = true, pid
			}
		}
		if sig == unix.SIGTSTP || fg == pid {
			j.log("command stopped by %s, but contain's process group is orphaned (no job control): continuing it", signals.Name(sig))
			j.signalGroup(unix.SIGCONT)
			return
		}
		j.log("command stopped by %s and the terminal is not contain's to give", signals.Name(sig))
		return
	}
	j.stopped, j.holds = true, false
	if j.tty.foreground() == pid {
		if err := j.tty.setForeground(j.own); err != nil {
			j.log("cannot take the terminal back: %v", err)
		}
	}
	j.log("command stopped by %s: stopping contain too", signals.Name(sig))
	j.stopSelf(selfStop(sig))
}

// resumed handles SIGCONT: after fg, contain is in the foreground again and
// gives the terminal back to COMMAND; after bg it is not, and COMMAND goes
// on in the background. Either way SIGCONT goes to the whole group.
func (j *jobControl) resumed(pid int) {
	if j.stopped && j.tty != nil && j.tty.foreground() == j.own {
		if err := j.tty.setForeground(pid); err != nil {
			j.log("cannot give the terminal to the command: %v", err)
		} else {
			j.holds = true
		}
	}
	j.stopped = false
	j.log("received SIGCONT: forwarding it to the group")
	j.signalGroup(unix.SIGCONT)
}

// restore gives the terminal back to contain's own process group, if
// COMMAND's side has it: COMMAND's group, or one COMMAND gave it to (a
// shell's job). Not after a stop and bg: the shell took it back then,
// and taking it from the shell would leave it unable to read its next
// line (an interactive bash exits).
func (j *jobControl) restore() {
	if j.tty == nil || !j.holds {
		return
	}
	j.holds = false
	if fg := j.tty.foreground(); fg != j.own && fg != -1 {
		if err := j.tty.setForeground(j.own); err != nil {
			j.log("cannot give the terminal back: %v", err)
		}
	}
}

// putBack puts back the terminal's settings as contain found them when it
// handed the terminal to COMMAND, once a signal ended COMMAND (contain's
// timeout, a request to stop, a limit, or any other), so that a program
// killed in raw mode (an editor, a pager) leaves no terminal without echo
// behind. Only while contain's group has the terminal (restore): after a
// stop and bg it is the shell's, whose own settings must stay. A COMMAND
// that exits of itself leaves the terminal as it chose to, as without
// contain.
func (j *jobControl) putBack() {
	if j.found == nil || j.tty.foreground() != j.own {
		return
	}
	now, err := j.tty.settings()
	if err == nil && *now == *j.found {
		return
	}
	if err := j.tty.setSettings(j.found); err != nil {
		j.log("cannot put back the terminal's settings: %v", err)
		return
	}
	j.log("put back the terminal's settings as contain found them")
}
