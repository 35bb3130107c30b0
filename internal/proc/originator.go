//go:build linux || darwin || windows

package proc

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/contain-cli/contain/session"
)

// OriginatorPin is the originator of a live session, held for contain
// stop: a pidfd on Linux, a process handle on Windows; on macOS, which
// has no such handle, its PID and start time are checked again
// immediately before each kill(2). It was checked, through the pin, to be
// the session's originator still (alive, and started no later than the
// session's earliest process, the rule that makes a session alive) and
// the user's own (unless the user may act on every user's processes).
//
// What else was read of it, for session.Implausible: its user, its
// executable and its arguments (as far as they could be read).
type OriginatorPin struct {
	PID   int
	Start uint64 // as the pin found it, in the OS's unit
	pin   Pin

	UID     int      // its real user; -1 on Windows, or unread
	SID     string   // its user's SID on Windows
	Owner   string   // its user, for people
	Exe     string   // its executable as the OS names it; "" if unread
	Argv    []string // its arguments; nil if unread
	SameExe bool     // Exe is the same file as this contain's executable
}

// Claimed is what stop checks of the pinned process before asking it
// (session.Implausible).
func (o *OriginatorPin) Claimed() session.Claimed {
	return session.Claimed{PID: o.PID, UID: o.UID, SID: o.SID, User: o.Owner, Start: o.Start,
		Contain: IsContainRun(o.SameExe, o.Exe, o.Argv), Executable: o.Exe}
}

// IsContainRun decides whether a process is a contain run (or contain
// timeout), from its executable (exe, as the OS names it; sameFile: it is
// the same file as this contain's) and its arguments (nil when they could
// not be read). Its executable must be this contain's binary or one named
// contain (contain.exe): a contain installed elsewhere, or replaced since
// it started (Linux's "(deleted)"), is contain as well; and its argv[1],
// when it can be read, must be run or timeout: contain's guard, shim,
// ps or stop are not originators. Where the executable cannot be read (a
// process made undumpable, whose user alone may ask it), argv[0] names
// it.
func IsContainRun(sameFile bool, exe string, argv []string) bool {
	name := strings.TrimSuffix(exe, " (deleted)")
	if name == "" && len(argv) > 0 {
		name = argv[0]
	}
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if !sameFile && name != "contain" && !strings.EqualFold(name, "contain.exe") {
		return false
	}
	return argv == nil || len(argv) >= 2 && (argv[1] == "run" || argv[1] == "timeout")
}

// sameExe is sameExecutable; tests replace it.
var sameExe = sameExecutable

// sameExecutable reports whether path names the same file as this
// contain's executable.
func sameExecutable(path string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	b, err := os.Stat(self)
	return err == nil && os.SameFile(a, b)
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
	o := &OriginatorPin{PID: pid, Start: p.Start, pin: m.Pin(pid, p.Start, nil), UID: p.RUID, Owner: m.User(p.RUID)}
	if a, err := m.decodeArgs(pid, p.Comm); err == nil {
		o.Exe, o.Argv = a.Exec, a.Argv
		o.SameExe = sameExe(a.Exec)
	}
	return o, nil
}

// unseenWhy says why the session whose originator is pid cannot be seen:
// pid runs (as owner, "" if unread) and its environment cannot be read
// (err), so that neither it nor what it started as that user can be told
// to carry the tag.
func unseenWhy(pid int, owner string, err error) string {
	if owner != "" {
		return fmt.Sprintf("its originator, PID %d, runs as another user (%s) whose processes' environments this user cannot read", pid, owner)
	}
	return fmt.Sprintf("its originator, PID %d, runs and its environment cannot be read (%v)", pid, err)
}
