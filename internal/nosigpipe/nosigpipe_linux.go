package nosigpipe

import (
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// Stderr is where contain writes its messages. On Linux a write to a closed
// pipe never raises SIGPIPE in contain: contain run forwards the SIGPIPE it
// receives to COMMAND's group, and must neither die of the one its own
// write raises (contain run -v ... 2>&1 | head) nor take it for one sent
// from outside. The write fails with EPIPE instead.
func Stderr() io.Writer { return pipeSafe(2) }

// pipeSafe writes to a file descriptor with SIGPIPE blocked on the writing
// thread; the SIGPIPE a broken pipe raises is sent to that thread alone, and
// is taken off it before SIGPIPE is unblocked again.
type pipeSafe int

func (fd pipeSafe) Write(b []byte) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return onThread(int(fd), b)
}

// onThreadWriter is pipeSafe for a goroutine that stays on its thread
// already (Locked).
type onThreadWriter int

func (fd onThreadWriter) Write(b []byte) (int, error) { return onThread(int(fd), b) }

// onThread is pipeSafe's write, on a thread the calling goroutine does
// not leave.
func onThread(fd int, b []byte) (int, error) {
	var set, old unix.Sigset_t
	signals.AddTo(&set, unix.SIGPIPE)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return 0, err
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	n := 0
	for n < len(b) {
		m, err := unix.Write(fd, b[n:])
		switch err {
		case nil:
			n += m
		case unix.EINTR:
		case unix.EAGAIN: // a descriptor someone made non-blocking
			unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, -1)
		case unix.EPIPE:
			var now unix.Timespec
			unix.RawSyscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), 0,
				uintptr(unsafe.Pointer(&now)), unsafe.Sizeof(set.Val[0]), 0, 0)
			return n, err
		default:
			return n, err
		}
	}
	return n, nil
}

// Writer writes to the pipe w without a SIGPIPE if its reader is gone.
func Writer(w *os.File) io.Writer { return pipeSafe(w.Fd()) }

// Locked is Writer for a goroutine that its thread keeps already: one
// that called runtime.LockOSThread, or the main goroutine while packages
// are initialised (the runtime keeps it on the main thread until every
// init function has returned). Writer's own lock would be the process's
// first, and the runtime starts a thread for that.
func Locked(w *os.File) io.Writer { return onThreadWriter(w.Fd()) }

// Quiet: on Linux, Writer handles SIGPIPE per write.
func Quiet(*os.File) {}
