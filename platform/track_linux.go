package platform

import (
	"io"
	"os"
	"syscall"
	"time"
)

// sessionOf: /proc gives every process's session with the rest.
var sessionOf func(int) (int, error)

// selfStop is the signal contain stops itself with when COMMAND stopped.
func selfStop(sig syscall.Signal) syscall.Signal { return sig }

// waker paces the tracker's scans. Linux tells no one but a privileged
// listener (the proc connector) of a fork, so it is a timer.
type waker struct{}

func newWaker(Logger) waker { return waker{} }

// follow would watch pid for forks.
func (waker) follow(int) {}

// wait waits most, or until done is closed (then false).
func (waker) wait(_, most time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(most)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

func (waker) close() {}

// guardPipe writes to the guard without a SIGPIPE if it is gone.
func guardPipe(w *os.File) io.Writer { return pipeSafe(w.Fd()) }

// quietPipe: on Linux, guardPipe handles SIGPIPE per write.
func quietPipe(*os.File) {}

// runCgroups is the cgroup of contain run PID, if it is still there.
func runCgroups(pid int) []LeftoverCgroup {
	if dir, err := runCgroupDir(pid); err == nil {
		if _, err := os.Stat(dir); err == nil {
			return []LeftoverCgroup{{Dir: dir}}
		}
	}
	return nil
}
