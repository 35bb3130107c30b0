package nosigpipe

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Stderr is where contain writes its messages, -v and the report to "-"
// included: file descriptor 2, written with write(2) itself. Not through
// os.Stderr: on a broken pipe (contain run -v ... 2>&1 | head) package os
// makes up a SIGPIPE for a write to fd 1 or 2 (os/file_unix.go, sigpipe)
// and hands it to signal.Notify, and contain run, which subscribes to
// SIGPIPE, would take it for one sent from outside and forward it to
// COMMAND's group, once per message. The kernel's own SIGPIPE for the
// failed write (XNU raises it for the whole process) never reaches the
// program: the Go runtime on macOS drops every SIGPIPE the kernel
// delivers (golang/go#33384). So the write fails with EPIPE, and nothing
// else happens. F_SETNOSIGPIPE is not set on fd 2: it would mark the open
// file, which COMMAND shares.
func Stderr() io.Writer { return fdWriter(2) }

// fdWriter writes to a file descriptor with write(2).
type fdWriter int

func (fd fdWriter) Write(b []byte) (int, error) {
	return writeFull(func(b []byte) (int, error) { return unix.Write(int(fd), b) },
		func() { unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, -1) }, b)
}

// Writer: the pipe w does not raise SIGPIPE once made Quiet.
func Writer(w *os.File) io.Writer { return w }

// Locked is Writer (Linux's needs the thread kept).
func Locked(w *os.File) io.Writer { return w }

// Quiet makes a write to the pipe w (the guard's, the shim's) fail with EPIPE, without
// SIGPIPE, if the guard is gone (F_SETNOSIGPIPE): contain would forward a
// SIGPIPE of its own to the group as if it came from outside. The pipe is
// contain's alone, so nothing else changes.
func Quiet(w *os.File) {
	unix.FcntlInt(w.Fd(), unix.F_SETNOSIGPIPE, 1)
}
