package proc

import (
	"errors"
	"strconv"
	"syscall"
)

// ErrGone: the process ended while it was being checked.
var ErrGone = errors.New("process ended")

// ErrIdentity means the PID now names another process than the one seen.
var ErrIdentity = errors.New("process changed identity")

// ID tells processes apart across PID reuse.
type ID struct {
	PID   int
	Start uint64
}

// Pin is one process held so that its PID cannot name another while
// reap acts on it: a pidfd on Linux, a process handle on Windows. Each
// call returns errGone once the process has ended.
type Pin interface {
	Stop() error
	Resume() error
	Signal(sig syscall.Signal) error
	Kill() error
	Close()
}

// LeftAlone is a pin's refusal to signal: where the OS has no pin that
// holds a process (macOS), the process is checked again before each
// signal, and one found changed (its tag) is left alone.
type LeftAlone struct{ Err error }

func (l *LeftAlone) Error() string { return l.Err.Error() }

func (l *LeftAlone) Unwrap() error { return l.Err }

// PinFailure is a process reap could not pin or check: it may still run.
type PinFailure struct {
	What string // "cannot be pinned", "cannot be checked"
	Err  error
}

func (f *PinFailure) Error() string { return f.What + ": " + f.Err.Error() }

func (f *PinFailure) Unwrap() error { return f.Err }

// ParseID reads an identity written as its PID and start time.
func ParseID(pid, start string) (ID, error) {
	p, err1 := strconv.Atoi(pid)
	s, err2 := strconv.ParseUint(start, 10, 64)
	return ID{PID: p, Start: s}, errors.Join(err1, err2)
}
