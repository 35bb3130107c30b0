package proc

import (
	"time"

	"golang.org/x/sys/unix"
)

// SessionOf asks macOS a process's session, which kern.proc.all records
// do not carry.
var SessionOf = unix.Getsid

// Waker paces the tracker's scans on macOS: a kqueue that watches every
// member for fork, exec and exit (EVFILT_PROC), so that a new process is
// looked for at once. NOTE_FORK does not name the child; the scan finds it.
// Without a kqueue, it is a timer, as on Linux.
type Waker struct {
	kq  int // -1: none
	log func(format string, args ...any)
}

func NewWaker(log func(format string, args ...any)) *Waker {
	kq, err := unix.Kqueue()
	if err != nil {
		log("cannot create a kqueue: %v (scanning on a timer only)", err)
		kq = -1
	} else {
		unix.CloseOnExec(kq)
	}
	return &Waker{kq: kq, log: log}
}

// Follow watches pid. One that is already gone (ESRCH) needs no watching.
func (w *Waker) Follow(pid int) {
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

// Wait waits until a watched process forks, execs or exits, but at least
// least; at most most; or until done is closed (then false).
func (w *Waker) Wait(least, most time.Duration, done <-chan struct{}) bool {
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

func (w *Waker) Close() {
	if w.kq >= 0 {
		unix.Close(w.kq)
	}
}
