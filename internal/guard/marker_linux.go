package guard

import "github.com/contain-cli/contain/internal/marker"

// markerPipe: on Linux the marker is placed with COMMAND (package marker),
// and a pipe's inode names it while any end of it lives: the guard holds
// none of it.
func markerPipe() int { return -1 }

// MarkerEnd: there is none on Linux (markerPipe).
func (g *Guard) MarkerEnd() int { return -1 }

// markerHolds is the guard's test of a process for the session's marker,
// nil where it has none: its descriptor at marker.FD is the pipe whose
// inode contain told of.
func markerHolds(o Orders) func(pid int) bool {
	if o.Marker == 0 {
		return nil
	}
	return func(pid int) bool { return marker.Of(pid) == o.Marker }
}
