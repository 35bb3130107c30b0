package proc

import (
	"cmp"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc/peb"

	"github.com/contain-cli/contain/session"
)

// originatorAccess is what contain stop needs of an originator: to check
// it (times, owner), to wait for it, and, for -s KILL and --kill, to
// terminate it.
const originatorAccess = windows.SYNCHRONIZE | windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_TERMINATE

// ErrNoStopEvent: the originator does not listen for contain stop.
var ErrNoStopEvent = errors.New("Windows has no signal that one process can send another, and it does not listen for contain stop (only contain run does); -s KILL terminates it")

// PinOriginator opens a handle on pid, the originator of a session whose
// earliest process started at notAfter, and checks through it its
// creation time and its user for me: while the handle is open the PID
// names that process and no other. ErrGone: it has ended; ErrIdentity:
// it started after the session; a PinFailure: it could not be opened or
// read; otherwise why me may not signal it.
func PinOriginator(pid int, notAfter uint64, me session.Reaper) (*OriginatorPin, error) {
	h, err := windows.OpenProcess(originatorAccess, false, uint32(pid))
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		// Asking through the stop event needs no right on the process
		// beyond reading it; -s KILL will say it is denied.
		h, err = windows.OpenProcess(originatorAccess&^windows.PROCESS_TERMINATE, false, uint32(pid))
	}
	switch {
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		return nil, ErrGone
	case err != nil:
		return nil, &PinFailure{What: "cannot be pinned", Err: err}
	}
	start, exited, err := CreationTime(h)
	if err != nil {
		windows.CloseHandle(h)
		return nil, &PinFailure{What: "cannot be checked", Err: err}
	}
	o, _ := processOwner(h) // unread: no SID, which is not the user's
	if err := originatorCheck(session.Originator{Exists: true, Zombie: exited, Start: start}, notAfter, -1, o.sid, o.name, me); err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	op := &OriginatorPin{PID: pid, Start: start, pin: &Handle{H: h}, UID: -1, SID: o.sid, Owner: o.name}
	op.Exe, op.Argv = imageOf(h, pid, start)
	op.SameExe = sameExecutable(op.Exe)
	return op, nil
}

// imageOf reads, for contain stop's checks, the image path of the process
// h holds and its command line (nil when it cannot be read: that needs
// PROCESS_VM_READ, through a second handle checked to be the same
// process by its creation time).
func imageOf(h windows.Handle, pid int, start uint64) (string, []string) {
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	exe := ""
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) == nil {
		exe = windows.UTF16ToString(buf[:n])
	}
	r, err := windows.OpenProcess(ReadAccess, false, uint32(pid))
	if err != nil {
		return exe, nil
	}
	defer windows.CloseHandle(r)
	if s, exited, err := CreationTime(r); err != nil || exited || s != start {
		return exe, nil
	}
	_, cmdline, err := ReadEnvironment(r)
	if err != nil || cmdline == "" {
		return exe, nil
	}
	return exe, peb.Args(cmdline)
}

// Ask asks the originator to close its group the Windows way: KILL
// terminates it (its job goes with it); any other signal sets the event
// contain run waits on (StopEventName), as a console control event would
// tell it to stop; 0 sends nothing. A process that has no such event is
// not asked (ErrNoStopEvent): Windows has no signal that one process can
// send another.
func (o *OriginatorPin) Ask(sig syscall.Signal) error {
	switch sig {
	case 0:
		return nil
	case syscall.SIGKILL:
		return o.pin.Kill()
	}
	name, err := windows.UTF16PtrFromString(StopEventName(o.PID))
	if err != nil {
		return err
	}
	ev, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, name)
	if err == nil {
		defer windows.CloseHandle(ev)
	}
	switch {
	case o.Exited():
		return ErrGone
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND):
		return ErrNoStopEvent
	case err != nil:
		return fmt.Errorf("cannot open its stop event %s: %w", StopEventName(o.PID), err)
	}
	return windows.SetEvent(ev)
}

// Unseen says why this user cannot see the session whose originator is
// pid: pid is a live process whose environment (its PEB) cannot be read
// (another user's, unless elevated). "" when pid names no live process,
// or its environment can be read.
func Unseen(pid int) string {
	if systemProcess(pid) {
		return ""
	}
	q, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(q)
	if _, exited, err := CreationTime(q); err != nil || exited {
		return ""
	}
	h, err := windows.OpenProcess(ReadAccess, false, uint32(pid))
	if err == nil {
		_, _, err = ReadEnvironment(h)
		windows.CloseHandle(h)
	}
	if err == nil || errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return ""
	}
	owner := ""
	if o, oerr := processOwner(q); oerr == nil && o.sid != CurrentOwner() {
		owner = cmp.Or(o.name, o.sid)
	}
	return unseenWhy(pid, owner, err)
}
