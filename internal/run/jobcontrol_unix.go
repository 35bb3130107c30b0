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
}

// jobControl is COMMAND's share of contain's terminal, a component with
// state of its own: COMMAND's group gets the foreground at its start when
// contain has it; when COMMAND stops (Ctrl-Z) contain takes the terminal
// back and stops too, so that the shell sees its job stopped; fg gives
// it to COMMAND again; at the end contain's own group has it back. The
// runner supplies the acts.
type jobControl struct {
	tty  tty // nil: no terminal (CI, cron, a pipe), or a library's copy
	own  int // contain's process group
	log  Logger
	gave bool // COMMAND's group was given the terminal at some point
	// stopped: COMMAND is stopped (Ctrl-Z) and so is contain.
	stopped bool

	// orphaned reports whether contain's process group is orphaned (no
	// shell can resume it); stopSelf stops contain with sig; signalGroup
	// sends sig to COMMAND's group.
	orphaned    func() bool
	stopSelf    func(sig syscall.Signal)
	signalGroup func(sig syscall.Signal)
}

// inForeground reports whether contain's group has the terminal: COMMAND
// then starts in the foreground (decided once, before the first try).
func (j *jobControl) inForeground() bool { return j.tty != nil && j.tty.foreground() == j.own }

// started records that COMMAND's group took the terminal at its start.
func (j *jobControl) started(foreground bool) { j.gave = j.gave || foreground }

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
				j.gave, fg = true, pid
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
	j.stopped = true
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
			j.gave = true
		}
	}
	j.stopped = false
	j.log("received SIGCONT: forwarding it to the group")
	j.signalGroup(unix.SIGCONT)
}

// restore gives the terminal back to contain's own process group, if
// COMMAND's ever had it.
func (j *jobControl) restore() {
	if j.tty == nil || !j.gave {
		return
	}
	if fg := j.tty.foreground(); fg != j.own && fg != -1 {
		if err := j.tty.setForeground(j.own); err != nil {
			j.log("cannot give the terminal back: %v", err)
		}
	}
}
