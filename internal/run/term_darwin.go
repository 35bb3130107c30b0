package run

import (
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The termios requests: read the settings, and set them once the output
// already written has been sent (tcsetattr's TCSADRAIN).
const (
	getSettings      = unix.TIOCGETA
	setSettingsDrain = unix.TIOCSETAW
)

// setForeground makes pgrp the terminal's foreground group. A process
// outside the foreground that calls tcsetpgrp gets SIGTTOU (and would
// stop) unless it ignores or blocks it. x/sys has no per-thread signal
// mask for macOS, so contain ignores SIGTTOU. It stays ignored afterwards:
// signal.Reset does not undo signal.Ignore for a signal whose default the
// Go runtime leaves to the kernel (golang/go#46321), so contain stops
// itself with SIGSTOP where COMMAND stopped with SIGTTOU (selfStop). The
// guard and COMMAND are started before, and inherit nothing of it.
func (t *terminal) setForeground(pgrp int) error {
	signal.Ignore(unix.SIGTTOU)
	return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
}

// setSettings sets the terminal's settings, after the output already
// written (TCSADRAIN), as a shell or stty(1) does. tcsetattr from outside
// the foreground gets SIGTTOU as tcsetpgrp does: ignored, as for
// setForeground.
func (t *terminal) setSettings(s *unix.Termios) error {
	signal.Ignore(unix.SIGTTOU)
	return unix.IoctlSetTermios(t.fd, setSettingsDrain, s)
}

// selfStop is the signal contain stops itself with when COMMAND stopped:
// SIGSTOP for SIGTTOU, which contain ignores for good once it has handed
// the terminal over (term_darwin.go), so that a kill with it would not
// stop contain.
func selfStop(sig syscall.Signal) syscall.Signal {
	if sig == unix.SIGTTOU {
		return unix.SIGSTOP
	}
	return sig
}
