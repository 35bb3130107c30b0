package run

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// ExitBySignal ends contain with sig, the signal that killed COMMAND, as
// GNU timeout does: a shell then sees that its job died of that signal
// (and stops a loop on Ctrl-C), not just a status of 128+N. Core dumps are
// turned off first; a core of contain would say nothing about COMMAND.
//
// The Go runtime's own handler is bypassed: it would print a stack trace
// for SIGQUIT and others. The disposition is set to the default in the
// kernel, the signal unblocked on this thread and sent to it. It returns
// only if contain is still alive after that.
func ExitBySignal(sig syscall.Signal) error {
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	if sig != unix.SIGKILL && sig != unix.SIGSTOP {
		var dfl [4]uint64 // a kernel struct sigaction: SIG_DFL, no flags, empty mask
		var set unix.Sigset_t
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0,
			unsafe.Sizeof(set.Val[0]), 0, 0); errno != 0 {
			return errno
		}
		signals.AddTo(&set, sig)
		if err := unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil); err != nil {
			return err
		}
	}
	if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), sig); err != nil {
		return err
	}
	return syscall.EINVAL // a signal whose default action does not end a process
}
