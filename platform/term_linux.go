package platform

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// terminal is contain's controlling terminal, when it has one. contain hands
// the terminal's foreground to COMMAND's process group so that COMMAND can
// read it and gets Ctrl-C and Ctrl-Z, and takes it back when COMMAND stops
// or ends.
type terminal struct {
	fd int
}

// openTerminal returns the controlling terminal, or nil when there is none
// (CI, cron, a pipe): then nothing about terminals is done.
func openTerminal() *terminal {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if _, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
		unix.Close(fd)
		return nil
	}
	return &terminal{fd: fd}
}

// foreground is the terminal's foreground process group, or -1.
func (t *terminal) foreground() int {
	pg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return pg
}

// setForeground makes pgrp the terminal's foreground group. A process outside
// the foreground that calls tcsetpgrp gets SIGTTOU (and would stop) unless
// the calling thread blocks it; blocking is per thread, hence the lock. The
// signal is blocked rather than ignored because an ignored signal would be
// inherited by every command contain starts.
func (t *terminal) setForeground(pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	addSignal(&set, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return err
}

func (t *terminal) close() { unix.Close(t.fd) }
