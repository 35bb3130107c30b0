package proc

import (
	"time"
)

// SessionOf: /proc gives every process's session with the rest.
var SessionOf func(int) (int, error)

// Waker paces the tracker's scans. Linux tells no one but a privileged
// listener (the proc connector) of a fork, so it is a timer.
type Waker struct{}

func NewWaker(func(string, ...any)) Waker { return Waker{} }

// Follow would watch pid for forks.
func (Waker) Follow(int) {}

// Wait waits most, or until done is closed (then false).
func (Waker) Wait(_, most time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(most)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

func (Waker) Close() {}
