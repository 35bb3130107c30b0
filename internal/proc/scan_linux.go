package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// ParentOf is pid's parent.
func ParentOf(pid int) (int, error) {
	st, err := ReadStat(pid, make([]byte, 1024))
	return st.PPID, err
}

// Lives reports whether process id is alive: not gone, not a zombie, and
// its PID not taken by another.
func Lives(id ID) bool {
	st, err := ReadStat(id.PID, nil)
	return err == nil && st.Start == id.Start && !st.Zombie()
}

// StartOf is pid's start time (0 if it cannot be read).
func StartOf(pid int) uint64 {
	st, err := ReadStat(pid, nil)
	if err != nil {
		return 0
	}
	return st.Start
}

// EntryOf reads one process as a scan would see it.
func EntryOf(pid int) (Entry, bool) {
	st, err := ReadStat(pid, nil)
	if err != nil {
		return Entry{}, false
	}
	return EntryFrom(pid, st), true
}

// EntryFrom is what the tracker keeps of a process's stat.
func EntryFrom(pid int, st procfs.Stat) Entry {
	return Entry{PID: pid, PPID: st.PPID, Pgrp: st.PGRP, Sid: st.Session, Start: st.Start, Zombie: st.Zombie(), Comm: st.Comm,
		Usage: UsageFrom(st), ChildCPU: Ticks(st.CUTime + st.CSTime)}
}

// UsageFrom is the usage a stat line shows.
func UsageFrom(st procfs.Stat) session.Usage {
	return session.Usage{CPU: Ticks(st.UTime + st.STime), RSS: st.RSS * pageSize, Known: true}
}

// Ticks is a number of clock ticks as a duration.
func Ticks(n uint64) time.Duration { return time.Duration(n) * (time.Second / procfs.TicksPerSecond) }

var pageSize = uint64(os.Getpagesize())

// Scan lists every visible process for the tracker.
func Scan() ([]Entry, error) {
	pids, err := FS.PIDs()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1024)
	out := make([]Entry, 0, len(pids))
	for _, pid := range pids {
		st, err := ReadStat(pid, buf)
		if err != nil {
			continue // gone since the listing
		}
		out = append(out, EntryFrom(pid, st))
	}
	return out, nil
}

// ErrNoEnviron: a process's environment read empty, as a kernel thread's
// is, or a process's in the middle of its exec (the new image's not yet
// set up): nothing to say of its tag yet; read it again later.
var ErrNoEnviron = errors.New("its environment is empty (a kernel thread, or a process in the middle of its exec)")

// ReadTag reads the tag of pid: ok is false when its environment cannot
// be read or holds none.
func ReadTag(pid int, buf []byte) (value string, ok bool, err error) {
	env, err := FS.Environ(pid, buf)
	if err != nil {
		return "", false, err
	}
	if len(env) == 0 {
		return "", false, ErrNoEnviron
	}
	value, ok = procfs.Getenv(env, tag.Var)
	return value, ok, nil
}

// UIDOf is pid's real user ID.
func UIDOf(pid int) (int, error) { return FS.UID(pid, nil) }

// SignalMember sends sig to pid through a pidfd, after checking that the
// PID still names the process seen (start time, and verify).
func SignalMember(pid int, start uint64, sig syscall.Signal, verify func() error) error {
	buf := make([]byte, 1024)
	return SignalPinned(pid, sig, func() error {
		if start != 0 {
			st, err := ReadStat(pid, buf)
			if err != nil {
				return err
			}
			if st.Start != start {
				return ErrIdentity
			}
		}
		if verify != nil {
			return verify()
		}
		return nil
	})
}

// StartWall turns a start time in clock ticks into wall-clock time, from
// COMMAND's, whose start (ref, in ticks) was seen at refWall: /proc/stat's
// boot time has whole seconds only.
func StartWall(start, ref uint64, refWall time.Time) time.Time {
	return refWall.Add(time.Duration(int64(start)-int64(ref)) * (time.Second / procfs.TicksPerSecond))
}

// ArgvOf reads pid's arguments (nil if they cannot be read).
func ArgvOf(pid int) []string {
	argv, _ := FS.Cmdline(pid, nil)
	return argv
}

// HeldStdio reports whether pid holds contain's stdout or stderr open:
// one of its descriptors is the same file (a pipe a reader waits on to end).
func HeldStdio(pid int) (out, err *bool, why string) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		return nil, nil, fmt.Sprintf("cannot read %s: %v", dir, rerr)
	}
	o, e := false, false
	so, _ := os.Stdout.Stat()
	se, _ := os.Stderr.Stat()
	for _, d := range entries {
		st, serr := os.Stat(dir + "/" + d.Name())
		if serr != nil {
			continue
		}
		o = o || so != nil && os.SameFile(st, so)
		e = e || se != nil && os.SameFile(st, se)
	}
	return &o, &e, ""
}

// Stopped reports whether pid is stopped (state T).
func Stopped(pid int) bool {
	s, err := ReadStat(pid, nil)
	return err == nil && s.State == 'T'
}

// UsageOf reads pid's CPU time and resident memory, and the CPU time of
// the children it has waited for.
func UsageOf(pid int, buf []byte) (u session.Usage, childCPU time.Duration, err error) {
	st, err := ReadStat(pid, buf)
	if err != nil {
		return session.Usage{}, 0, err
	}
	return UsageFrom(st), Ticks(st.CUTime + st.CSTime), nil
}
