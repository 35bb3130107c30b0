package run

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// guardPipe: the pipe to the guard does not raise SIGPIPE (quietPipe).
func guardPipe(w *os.File) io.Writer { return w }

// quietPipe makes a write to the guard's pipe fail with EPIPE, without
// SIGPIPE, if the guard is gone (F_SETNOSIGPIPE): contain would forward a
// SIGPIPE of its own to the group as if it came from outside. The pipe is
// contain's alone, so nothing else changes.
func quietPipe(w *os.File) {
	unix.FcntlInt(w.Fd(), unix.F_SETNOSIGPIPE, 1)
}
