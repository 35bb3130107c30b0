package guard

import (
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/marker"
	"github.com/contain-cli/contain/internal/proc"
)

// The session's marker on macOS (track.Marker) is a pipe made before the
// guard starts, so that the guard inherits its kept end at keptFD and
// holds it until it exits: a pair of handles names the marker only while
// the kept end lives (no other pipe end can then take either address),
// and after a crash the guard is the one left to hold it. contain keeps
// its own copy, close-on-exec, and hands the other end to COMMAND
// (MarkerEnd).
var mark struct {
	once sync.Once
	r, w int // -1: none, or handed over (w)
}

// markerPipe makes the marker's pipe once, both ends close-on-exec, and
// returns its kept end for the guard's keptFD (-1: none, where the limit
// of open files leaves no marker descriptor or the pipe cannot be made).
func markerPipe() int {
	mark.once.Do(func() {
		mark.r, mark.w = -1, -1
		if !marker.Fits() || !marker.Free() {
			return
		}
		var p [2]int
		syscall.ForkLock.Lock()
		err := unix.Pipe(p[:])
		if err == nil {
			unix.CloseOnExec(p[0])
			unix.CloseOnExec(p[1])
		}
		syscall.ForkLock.Unlock()
		if err == nil {
			mark.r, mark.w = p[0], p[1]
		}
	})
	return mark.r
}

// MarkerEnd hands over the marker's end for COMMAND (macOS), once: the
// caller places it at marker.FD and closes it. -1: there is none, the
// guard holding no kept end; the caller makes a marker of its own, which
// the guard cannot use (see markerHolds).
func (g *Guard) MarkerEnd() int {
	if mark.r < 0 || mark.w < 0 {
		return -1
	}
	w := mark.w
	mark.w = -1
	return w
}

// markerHolds is the guard's test of a process for the session's marker,
// nil where it has none. On macOS it tests the pair of handles contain
// told of, and only while the guard's keptFD is that pair's kept end:
// else a handle could name an end freed and taken again since.
func markerHolds(o Orders) func(pid int) bool {
	m := o.Pair
	if m.Held == 0 || m.Kept == 0 {
		return nil
	}
	h, peer, err := proc.PipeHandles(unix.Getpid(), keptFD)
	if err != nil || h != m.Kept || peer != m.Held {
		return nil
	}
	return func(pid int) bool {
		pipes, err := proc.Pipes(pid)
		return err == nil && m.HeldIn(pipes)
	}
}
