package containment

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// heldAttrs is what every command of a Group's session starts with on
// macOS: the holder's tag, and the terminal when Options.Terminal asks
// for it (nil: none). macOS has no cgroup and no Pdeathsig: the holder
// finds the commands by their tag and lineage, and closes the session
// when the program's pipe closes.
type heldAttrs struct {
	tag string
	tty *os.File
}

func (a *heldAttrs) open(tag, _ string, terminal bool) {
	a.tag = tag
	if terminal {
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0); err == nil {
			a.tty = f
		}
	}
}

func (a *heldAttrs) add(*syscall.SysProcAttr) {}

func (a *heldAttrs) warm() {}

func (a *heldAttrs) start(cmd *exec.Cmd) error { return cmd.Start() }

func (a *heldAttrs) giveTerminal(attr *syscall.SysProcAttr) bool {
	if a.tty == nil {
		return false
	}
	fg, err := unix.IoctlGetInt(int(a.tty.Fd()), unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return false
	}
	attr.Foreground, attr.Ctty = true, int(a.tty.Fd())
	return true
}

// takeTerminal gives the terminal back with SIGTTOU ignored for the
// moment it takes (macOS has no per-thread mask that Go reaches without
// cgo): a program that subscribed to SIGTTOU (signal.Notify) has it reset.
func (a *heldAttrs) takeTerminal() {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	unix.IoctlSetPointerInt(int(a.tty.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}

// close: nothing to let go of (the terminal stays open: a Wait may
// still give it back).
func (a *heldAttrs) close() {}

// waitEnded waits for pid's exit with kqueue (NOTE_EXIT comes before the
// parent reaps it); false when it cannot be watched (reaped already, or
// no kqueue): nothing is then sent to its process group.
func waitEnded(pid int) bool {
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		return false
	}
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, out, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// startNow is the time now in the unit of a process's start time
// (microseconds since the epoch).
func startNow() uint64 { return uint64(time.Now().UnixMicro()) + 1 }
