package proc

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ParentOf is pid's parent.
func ParentOf(pid int) (int, error) {
	p, found, err := Darwin.Lookup(pid)
	if err == nil && !found {
		err = unix.ESRCH
	}
	return p.PPID, err
}

// Lives reports whether process id is alive: not gone, not a zombie, and
// its PID not taken by another.
func Lives(id ID) bool {
	p, found, err := Darwin.Lookup(id.PID)
	return err == nil && found && p.Start == id.Start && !p.Zombie()
}

// StartOf is pid's start time (0 if it cannot be read).
func StartOf(pid int) uint64 {
	p, _, _ := Darwin.Lookup(pid)
	return p.Start
}

// EntryOf: macOS has no cgroup whose members the scans could miss.
func EntryOf(int) (Entry, bool) { return Entry{}, false }

// Scan lists every process for the tracker.
func Scan() ([]Entry, error) {
	procs, err := Darwin.All()
	return MacEntries(procs), err
}

// ReadTag reads pid's tag (buf is not needed on macOS).
func ReadTag(pid int, _ []byte) (string, bool, error) { return Darwin.readTag(pid) }

// UIDOf is pid's real user ID.
func UIDOf(pid int) (int, error) {
	p, found, err := Darwin.Lookup(pid)
	if err == nil && !found {
		err = unix.ESRCH
	}
	return p.RUID, err
}

// SignalMember sends sig to pid after reading it again: the same start
// time, not a zombie, and verify.
func SignalMember(pid int, start uint64, sig syscall.Signal, verify func() error) error {
	return Darwin.signalSeen(pid, start, sig, verify)
}

// StartWall: P_starttime is microseconds since the epoch.
func StartWall(start, _ uint64, _ time.Time) time.Time { return time.UnixMicro(int64(start)) }

// ArgvOf reads pid's arguments (nil if they cannot be read).
func ArgvOf(pid int) []string {
	p, found, err := Darwin.Lookup(pid)
	if err != nil || !found {
		return nil
	}
	if a, _ := Darwin.ReadArgs(p); a != nil {
		return a.Argv
	}
	return nil
}

// HeldStdio: macOS shows another process's descriptors only through
// libproc, which contain does not use.
func HeldStdio(int) (out, err *bool, why string) {
	return nil, nil, "macOS shows another process's descriptors only through libproc"
}

// Stopped reports whether pid shows as stopped (p_stat SSTOP).
func Stopped(pid int) bool {
	p, found, err := Darwin.Lookup(pid)
	return err == nil && found && p.Stopped()
}
