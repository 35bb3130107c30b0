package track

// The session's marker descriptor, over plain values: tested on every OS
// (marker_test.go); proc.Pipes reads each process's pipes on macOS.

import "github.com/contain-cli/contain/internal/proc"

// Marker is the session's marker: one end of a pipe that COMMAND is given
// at a high descriptor, not close-on-exec, so that every process that
// inherits it, through fork and exec, setsid and re-parenting, holds it
// until it closes it. Whoever holds it is the session's, whatever its
// lineage says: it finds a process whose forking parent ended unseen
// between two scans, which lineage cannot.
//
// The kernel names a pipe end by a handle, the same in every process
// that holds it (proc_pidfdinfo PROC_PIDFDPIPEINFO: pipe_handle and
// pipe_peerhandle). A handle is a keyed hash of the end's kernel address
// (sys_pipe.c, fill_pipeinfo), and an address is handed out again once
// the end is freed: alone, a handle could name a stranger's pipe made
// after every holder of the marker had closed it. So the marker is the
// pair: Held, the end COMMAND is given, and Kept, the other end, which
// contain holds open for the whole session (and gives no one), so that
// no other pipe end can have its address, and no stranger's descriptor
// shows both handles. contain reads the pair in its own descriptor table
// before it starts COMMAND (proc.PipeHandles of the end it hands over).
//
// A process that closes every descriptor it does not know (closefrom,
// a daemon's "close all") drops the marker; lineage still finds it.
type Marker struct {
	Held, Kept uint64
}

// HeldIn reports whether one of a process's pipe descriptors is the
// marker's held end. contain's own end shows the pair the other way
// round, and is not it.
func (m Marker) HeldIn(pipes []proc.MacPipe) bool {
	if m.Held == 0 || m.Kept == 0 {
		return false // not a marker: a handle of 0 is a closed end
	}
	for _, p := range pipes {
		if p.Handle == m.Held && p.Peer == m.Kept {
			return true
		}
	}
	return false
}
