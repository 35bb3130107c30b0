package run

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// The termios requests: read the settings, and set them once the output
// already written has been sent (tcsetattr's TCSADRAIN).
const (
	getSettings      = unix.TCGETS
	setSettingsDrain = unix.TCSETSW
)

// setForeground makes pgrp the terminal's foreground group.
func (t *terminal) setForeground(pgrp int) error {
	return withoutSIGTTOU(func() error { return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp) })
}

// setSettings sets the terminal's settings, after the output already
// written (TCSADRAIN), as a shell or stty(1) does.
func (t *terminal) setSettings(s *unix.Termios) error {
	return withoutSIGTTOU(func() error { return unix.IoctlSetTermios(t.fd, setSettingsDrain, s) })
}

// withoutSIGTTOU runs change, a change of the terminal. A process outside
// the foreground that calls tcsetpgrp or tcsetattr gets SIGTTOU (and would
// stop) unless the calling thread blocks it; blocking is per thread, hence
// the lock. The signal is blocked rather than ignored because an ignored
// signal would be inherited by every command contain starts.
func withoutSIGTTOU(change func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	signals.AddTo(&set, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	err := change()
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return err
}

// selfStop is the signal contain stops itself with when COMMAND stopped.
func selfStop(sig syscall.Signal) syscall.Signal { return sig }
