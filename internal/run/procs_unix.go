//go:build linux || darwin

package run

import (
	"syscall"

	"github.com/contain-cli/contain/internal/proc"
)

// procTable is what the runner reads of the machine's processes, and does
// to them, while it follows and closes the group (members_unix.go,
// facts_unix.go, untold_unix.go): the scans, a signal to a member seen,
// a member's tag, its identity read alone (one the cgroup holds), its
// command line and descriptors, and whether it still lives. osProcs is
// the machine's, package proc's calls as they are; a test puts a table of
// its own here (close_unix_test.go), so that the close of the group is
// checked without a process. Run sets it: never nil in a run.
type procTable interface {
	// scan lists every visible process (proc.Scan).
	scan() ([]proc.Entry, error)
	// signal sends sig to pid once it has checked that the PID still
	// names the process seen: its start time, or where that is 0 (a
	// process only the cgroup showed), that in still holds it
	// (proc.SignalMember).
	signal(pid int, start uint64, sig syscall.Signal, in group) error
	// readTag reads pid's tag; ok: it has one (proc.ReadTag).
	readTag(pid int) (value string, ok bool, err error)
	// entryOf reads one process as a scan would (proc.EntryOf).
	entryOf(pid int) (proc.Entry, bool)
	// argvOf reads pid's command line, nil when it cannot (proc.ArgvOf).
	argvOf(pid int) []string
	// heldStdio: whether pid holds contain's stdout or stderr, or why
	// that cannot be told (proc.HeldStdio).
	heldStdio(pid int) (out, err *bool, why string)
	// lives: id is alive, not a zombie, its PID not taken (proc.Lives).
	lives(id proc.ID) bool
}

// osProcs is the machine's process table. It holds nothing, and what a
// call needs is made inside it (the check's function, the tag's buffer),
// where it stays on the stack: what the runner passes through the
// interface would escape to the heap, an allocation per call.
type osProcs struct{}

var _ procTable = osProcs{}

func (osProcs) scan() ([]proc.Entry, error) { return proc.Scan() }
func (osProcs) signal(pid int, start uint64, sig syscall.Signal, in group) error {
	if start == 0 {
		return proc.SignalMember(pid, 0, sig, func() error { return in.holds(pid) })
	}
	return proc.SignalMember(pid, start, sig, nil)
}
func (osProcs) readTag(pid int) (string, bool, error) {
	buf := make([]byte, 0, 4096)
	return proc.ReadTag(pid, buf)
}
func (osProcs) entryOf(pid int) (proc.Entry, bool)             { return proc.EntryOf(pid) }
func (osProcs) argvOf(pid int) []string                        { return proc.ArgvOf(pid) }
func (osProcs) heldStdio(pid int) (out, err *bool, why string) { return proc.HeldStdio(pid) }
func (osProcs) lives(id proc.ID) bool                          { return proc.Lives(id) }
