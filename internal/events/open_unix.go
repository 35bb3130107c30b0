//go:build linux || darwin

package events

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/nosigpipe"
)

// checkFD refuses a descriptor that is not open, that contain did not
// inherit, or that is open read-only. One contain inherited survived its
// exec, so close-on-exec is not set on it; every descriptor contain
// opens itself (the crash guard's pipes, a pidfd, the terminal) has it,
// and is never written to for fd:N.
func checkFD(n int) error {
	notOpen := func(err error) error {
		return fmt.Errorf("fd:%d: file descriptor %d is not open (%v): give contain one, as a shell does with %d>FILE", n, n, err, n)
	}
	fd, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	if err != nil {
		return notOpen(err)
	}
	if fd&unix.FD_CLOEXEC != 0 {
		return fmt.Errorf("fd:%d: file descriptor %d is contain's own, not one it inherited: give contain one, as a shell does with %d>FILE", n, n, n)
	}
	fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFL, 0)
	if err != nil {
		return notOpen(err)
	}
	if fl&unix.O_ACCMODE == unix.O_RDONLY {
		return fmt.Errorf("fd:%d: file descriptor %d is open for reading only", n, n)
	}
	return nil
}

// fdWriter writes to descriptor n itself, without SIGPIPE.
func fdWriter(n int) io.Writer { return nosigpipe.FD(n) }
