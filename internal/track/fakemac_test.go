package track

import (
	"maps"
	"slices"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// fakeMac is a kernel that keeps what XNU keeps of each process's lineage
// and descriptors (xnu-11417.101.15: kern_fork.c, kern_exec.c,
// kern_proc.c's pinsertchild, kern_exit.c's re-parenting, sys_pipe.c), for
// the tests of Lineage and Marker:
//   - fork: a new unique ID (one counter), ParentUniqueID the parent's, a
//     new pidversion (another counter), OrigParentIDVersion the parent's
//     pidversion (15.4 and later; 0 before), the descriptors copied;
//   - exec: a new pidversion; from macOS 13, ParentUniqueID the parent's
//     of that moment (launchd's for an orphan); the close-on-exec
//     descriptors closed (none here: the marker is not);
//   - exit: a zombie, its children re-parented to launchd (PPID 1; their
//     ParentUniqueID unchanged), its descriptors closed;
//   - reap: gone from every scan.
//
// PIDs are handed out from 100 up and wrap to 100 after 99998, as XNU's
// do, so that PID order is not fork order.
type fakeMac struct {
	t        *testing.T
	os       macOS
	nextUID  uint64
	nextVer  int32
	nextPID  int
	procs    map[int]*fakeMacProc
	nextPipe uint64
}

// macOS is the kernel's version, by what changed in lineage.
type macOS int

const (
	macOS12  macOS = iota // exec keeps ParentUniqueID
	macOS13               // exec sets ParentUniqueID to the parent's now
	macOS154              // and OrigParentIDVersion keeps the parent's pidversion at fork
)

type fakeMacProc struct {
	pid, ppid int
	pgrp, sid int // inherited at fork; setsid makes both the process's own
	start     uint64
	ids       proc.MacIDs
	zombie    bool
	tagged    bool                 // its environment shows the session's tag
	fds       map[int]proc.MacPipe // open pipe descriptors
}

const (
	fmLaunchd = 1
	fmContain = 10
	fmMarker  = 255 // the marker's descriptor in COMMAND
)

// newFakeMac boots launchd (unique ID 1, as the kernel's first fork) and
// contain (PID 10), which holds the kept end of the marker pipe.
func newFakeMac(t *testing.T, v macOS) *fakeMac {
	k := &fakeMac{t: t, os: v, nextPID: 99, procs: map[int]*fakeMacProc{}, nextPipe: 0x9e37_79b9_7f4a_7c15}
	k.procs[fmLaunchd] = &fakeMacProc{pid: fmLaunchd, pgrp: fmLaunchd, sid: fmLaunchd, start: 1, ids: proc.MacIDs{UniqueID: 1, IDVersion: 1}, fds: map[int]proc.MacPipe{}}
	k.procs[fmContain] = &fakeMacProc{pid: fmContain, ppid: fmLaunchd, pgrp: fmContain, sid: fmContain, start: 2, ids: proc.MacIDs{UniqueID: 2, ParentUniqueID: 1, IDVersion: 2}, fds: map[int]proc.MacPipe{}}
	k.nextUID, k.nextVer = 2, 2
	return k
}

// pipe makes a pipe and returns its two ends, each named by a handle
// that the kernel shows alike in every process.
func (k *fakeMac) pipe() (a, b proc.MacPipe) {
	k.nextPipe += 0x1000
	ha, hb := k.nextPipe, k.nextPipe+0x80
	return proc.MacPipe{Handle: ha, Peer: hb}, proc.MacPipe{Handle: hb, Peer: ha}
}

func (k *fakeMac) get(pid int) *fakeMacProc {
	p := k.procs[pid]
	if p == nil || p.zombie {
		k.t.Fatalf("fake kernel: no live process %d", pid)
	}
	return p
}

// startCommand starts COMMAND as contain does: forked by contain,
// tagged, with the marker's held end at fmMarker; contain keeps the other
// end. It returns COMMAND's PID and the marker.
func (k *fakeMac) startCommand() (int, Marker) {
	held, kept := k.pipe()
	k.get(fmContain).fds[4] = kept
	pid := k.fork(fmContain)
	p := k.get(pid)
	p.tagged = true
	p.pgrp = pid // Setpgid
	clear(p.fds)
	held.FD = fmMarker
	p.fds[fmMarker] = held
	k.exec(pid)
	return pid, Marker{Held: held.Handle, Kept: kept.Handle}
}

func (k *fakeMac) fork(parent int) int {
	pp := k.get(parent)
	for {
		k.nextPID++
		if k.nextPID > 99998 {
			k.nextPID = 100
		}
		if k.procs[k.nextPID] == nil {
			break
		}
	}
	k.nextUID++
	k.nextVer++
	c := &fakeMacProc{pid: k.nextPID, ppid: parent, pgrp: pp.pgrp, sid: pp.sid, start: 1000 + k.nextUID, tagged: pp.tagged,
		ids: proc.MacIDs{UniqueID: k.nextUID, ParentUniqueID: pp.ids.UniqueID, IDVersion: k.nextVer},
		fds: maps.Clone(pp.fds)}
	if k.os >= macOS154 {
		c.ids.OrigParentIDVersion = pp.ids.IDVersion
	}
	k.procs[c.pid] = c
	return c.pid
}

func (k *fakeMac) exec(pid int) {
	p := k.get(pid)
	k.nextVer++
	p.ids.IDVersion = k.nextVer
	if k.os >= macOS13 {
		p.ids.ParentUniqueID = k.procs[p.ppid].ids.UniqueID
	}
}

// execClean executes a program with an environment of its own (env -i,
// or a title written over the strings area): the tag is gone.
func (k *fakeMac) execClean(pid int) {
	k.exec(pid)
	k.get(pid).tagged = false
}

func (k *fakeMac) exit(pid int) {
	p := k.get(pid)
	p.zombie = true
	clear(p.fds)
	for _, c := range k.procs {
		if c.ppid == pid {
			c.ppid = fmLaunchd
		}
	}
}

func (k *fakeMac) reap(pid int) {
	if p := k.procs[pid]; p == nil || !p.zombie {
		k.t.Fatalf("fake kernel: %d is no zombie", pid)
	}
	delete(k.procs, pid)
}

// exitReaped: the process exits and its parent (or launchd) waits for it
// at once.
func (k *fakeMac) exitReaped(pid int) {
	k.exit(pid)
	k.reap(pid)
}

// setsid makes the process lead a new session and process group.
func (k *fakeMac) setsid(pid int) {
	p := k.get(pid)
	p.pgrp, p.sid = pid, pid
}

// closeAll closes every descriptor but the standard ones (a daemon's
// "close all", closefrom(3)).
func (k *fakeMac) closeAll(pid int) { clear(k.get(pid).fds) }

// scan is kern.proc.all with each process's PROC_PIDUNIQIDENTIFIERINFO
// (zombies answer, arg 1), newest first as XNU's allproc list gives them.
func (k *fakeMac) scan() []LineageEntry {
	var out []LineageEntry
	for _, p := range k.procs {
		out = append(out, LineageEntry{PID: p.pid, Start: p.start, IDs: p.ids})
	}
	slices.SortFunc(out, func(a, b LineageEntry) int { return int(b.IDs.UniqueID) - int(a.IDs.UniqueID) })
	return out
}

// entries is kern.proc.all as the tracker reads it (proc.MacEntries),
// with each process's session, which getsid would give.
func (k *fakeMac) entries() []proc.Entry {
	var out []proc.Entry
	for _, p := range k.procs {
		out = append(out, proc.Entry{PID: p.pid, PPID: p.ppid, Pgrp: p.pgrp, Sid: p.sid, Start: p.start, Zombie: p.zombie})
	}
	slices.SortFunc(out, func(a, b proc.Entry) int { return b.PID - a.PID })
	return out
}

// uniqueIDs is proc.UniqueIDs on the fake: any process, zombies too;
// ESRCH for a PID no process has.
func (k *fakeMac) uniqueIDs(pid int) (proc.MacIDs, error) {
	p := k.procs[pid]
	if p == nil {
		return proc.MacIDs{}, syscall.ESRCH
	}
	return p.ids, nil
}

// tables is every live process's pipes, as proc.Pipes reads them (a
// zombie has no descriptors left).
// markerTable is one process's pipe descriptors, as a scan reads them.
type markerTable struct {
	id    proc.ID
	pipes []proc.MacPipe
}

func (k *fakeMac) tables() []markerTable {
	var out []markerTable
	for _, p := range k.procs {
		if p.zombie {
			continue
		}
		var pipes []proc.MacPipe
		for fd, e := range p.fds {
			e.FD = fd
			pipes = append(pipes, e)
		}
		out = append(out, markerTable{id: proc.ID{PID: p.pid, Start: p.start}, pipes: pipes})
	}
	return out
}

// ids is a process's lineage as the kernel shows it now.
func (k *fakeMac) ids(pid int) proc.MacIDs { return k.procs[pid].ids }
