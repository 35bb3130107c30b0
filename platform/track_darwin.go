package platform

import (
	"io"
	"os"
	"syscall"
	"time"

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

// sessionOf asks macOS a process's session, which kern.proc.all records
// do not carry.
var sessionOf = unix.Getsid

// waker paces the tracker's scans on macOS: a kqueue that watches every
// member for fork, exec and exit (EVFILT_PROC), so that a new process is
// looked for at once. NOTE_FORK does not name the child; the scan finds it.
// Without a kqueue, it is a timer, as on Linux.
type waker struct {
	kq  int // -1: none
	log Logger
}

func newWaker(log Logger) *waker {
	kq, err := unix.Kqueue()
	if err != nil {
		log("cannot create a kqueue: %v (scanning on a timer only)", err)
		kq = -1
	} else {
		unix.CloseOnExec(kq)
	}
	return &waker{kq: kq, log: log}
}

// follow watches pid. One that is already gone (ESRCH) needs no watching.
func (w *waker) follow(pid int) {
	if w.kq < 0 {
		return
	}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_CLEAR)
	ev.Fflags = unix.NOTE_FORK | unix.NOTE_EXEC | unix.NOTE_EXIT
	if _, err := unix.Kevent(w.kq, []unix.Kevent_t{ev}, nil, nil); err != nil && err != unix.ESRCH {
		w.log("cannot watch %d for forks: %v", pid, err)
	}
}

// waitSlice bounds one kevent call, so that done is seen soon.
const waitSlice = 50 * time.Millisecond

// wait waits until a watched process forks, execs or exits, but at least
// least; at most most; or until done is closed (then false).
func (w *waker) wait(least, most time.Duration, done <-chan struct{}) bool {
	began := time.Now()
	woken := false
	for {
		select {
		case <-done:
			return false
		default:
		}
		spent := time.Since(began)
		if spent >= most || woken && spent >= least {
			return true
		}
		left := most - spent
		if woken {
			left = least - spent
		}
		if w.kq < 0 || woken {
			time.Sleep(min(left, waitSlice))
			continue
		}
		ts := unix.NsecToTimespec(int64(min(left, waitSlice)))
		events := make([]unix.Kevent_t, 16)
		n, err := unix.Kevent(w.kq, nil, events, &ts)
		if err != nil && err != unix.EINTR {
			w.log("kevent: %v", err)
			time.Sleep(min(left, waitSlice))
			continue
		}
		woken = woken || n > 0
	}
}

func (w *waker) close() {
	if w.kq >= 0 {
		unix.Close(w.kq)
	}
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

// runCgroups: macOS has no cgroups.
func runCgroups(int) []LeftoverCgroup { return nil }
