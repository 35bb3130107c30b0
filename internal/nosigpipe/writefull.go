package nosigpipe

import (
	"io"
	"syscall"
)

// writeFull writes b with write, one write(2) of a file descriptor, until
// all of it is written: again after EINTR, after wait once the descriptor
// can take more where EAGAIN says it cannot (a descriptor someone made
// non-blocking), and not at all after any other error, EPIPE included,
// which it returns with what was written. A write that takes nothing
// without an error is a short write.
func writeFull(write func([]byte) (int, error), wait func(), b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := write(b[n:])
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			wait()
		case err != nil:
			return n, err
		case m <= 0:
			return n, io.ErrShortWrite
		default:
			n += m
		}
	}
	return n, nil
}
