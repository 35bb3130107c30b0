//go:build linux || darwin || windows

package proc

import (
	"cmp"
	"fmt"

	"github.com/contain-cli/contain/session"
)

// OriginatorPin is the originator of a live session, held for contain
// stop: a pidfd on Linux, a process handle on Windows; on macOS, which
// has no such handle, its PID and start time are checked again
// immediately before each kill(2). It was checked, through the pin, to be
// the session's originator still (alive, and started no later than the
// session's earliest process, the rule that makes a session alive) and
// the user's own (unless the user may act on every user's processes).
type OriginatorPin struct {
	PID   int
	Start uint64 // as the pin found it, in the OS's unit
	pin   Pin
}

// Kill ends the originator at once: SIGKILL, or TerminateProcess.
func (o *OriginatorPin) Kill() error { return o.pin.Kill() }

// Exited reports whether the originator has ended (a zombie has).
func (o *OriginatorPin) Exited() bool { return ExitedPins([]Pin{o.pin})[0] }

// Close lets the originator go.
func (o *OriginatorPin) Close() { o.pin.Close() }

// originatorCheck decides, from what the pin read of the process now
// (now; uid on Unix, sid on Windows, owner its user for people), whether it
// is still the originator of a session whose earliest process started at
// notAfter, and one that me may signal. ErrGone: it has ended or is a
// zombie; ErrIdentity: it started after the session (a reused PID).
func originatorCheck(now session.Originator, notAfter uint64, uid int, sid, owner string, me session.Reaper) error {
	switch {
	case !now.Exists, now.Zombie:
		return ErrGone
	case now.Start > notAfter:
		return ErrIdentity
	case me.Root:
		return nil
	case me.SID != "" && sid != me.SID:
		return fmt.Errorf("it belongs to another user (%s)", cmp.Or(owner, sid, "unknown"))
	case me.SID == "" && uid != me.UID:
		return fmt.Errorf("it belongs to another user (%s)", cmp.Or(owner, fmt.Sprintf("uid %d", uid)))
	}
	return nil
}

// pinOriginator is PinOriginator on macOS, over m's system calls: the
// process is read (kern.proc.pid) and checked, and the MacPin returned
// reads it again before each signal (same PID and start time, not a
// zombie).
func (m *MacSys) pinOriginator(pid int, notAfter uint64, me session.Reaper) (*OriginatorPin, error) {
	p, found, err := m.Lookup(pid)
	if err != nil {
		return nil, &PinFailure{What: "cannot be checked", Err: err}
	}
	now := session.Originator{Exists: found, Zombie: p.Zombie(), Start: p.Start}
	if err := originatorCheck(now, notAfter, p.RUID, "", m.User(p.RUID), me); err != nil {
		return nil, err
	}
	return &OriginatorPin{PID: pid, Start: p.Start, pin: m.Pin(pid, p.Start, nil)}, nil
}
