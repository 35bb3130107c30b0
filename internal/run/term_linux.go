package run

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// setForeground makes pgrp the terminal's foreground group. A process outside
// the foreground that calls tcsetpgrp gets SIGTTOU (and would stop) unless
// the calling thread blocks it; blocking is per thread, hence the lock. The
// signal is blocked rather than ignored because an ignored signal would be
// inherited by every command contain starts.
func (t *terminal) setForeground(pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	signals.AddTo(&set, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return err
}

// selfStop is the signal contain stops itself with when COMMAND stopped.
func selfStop(sig syscall.Signal) syscall.Signal { return sig }
