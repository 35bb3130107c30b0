package nosigpipe

import (
	"errors"
	"io"
	"syscall"
	"testing"
)

// writeFull, the write loop of contain's stderr on macOS: short writes
// go on, EINTR is retried, EAGAIN waits, and EPIPE ends the write with an
// error (and nothing else: no SIGPIPE is made up).
func TestWriteFull(t *testing.T) {
	var got []byte
	steps := []struct {
		n   int
		err error
	}{{3, nil}, {0, syscall.EINTR}, {0, syscall.EAGAIN}, {2, nil}, {0, syscall.EPIPE}}
	waited := 0
	write := func(b []byte) (int, error) {
		s := steps[0]
		steps = steps[1:]
		got = append(got, b[:s.n]...)
		return s.n, s.err
	}
	n, err := writeFull(write, func() { waited++ }, []byte("abcdefgh"))
	if n != 5 || !errors.Is(err, syscall.EPIPE) || string(got) != "abcde" || waited != 1 || len(steps) != 0 {
		t.Errorf("writeFull = %d, %v; wrote %q, waited %d, %d steps left", n, err, got, waited, len(steps))
	}
	n, err = writeFull(func(b []byte) (int, error) { return len(b), nil }, nil, []byte("all"))
	if n != 3 || err != nil {
		t.Errorf("writeFull = %d, %v", n, err)
	}
	n, err = writeFull(func([]byte) (int, error) { return 0, nil }, nil, []byte("x"))
	if n != 0 || err != io.ErrShortWrite {
		t.Errorf("a write that takes nothing: %d, %v", n, err)
	}
}
