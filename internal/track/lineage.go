package track

// The session's descendants by the kernel's record of who forked whom
// (macOS's unique IDs), over plain values: tested on every OS
// (lineage_test.go, on a fake kernel); proc.UniqueIDs reads the values.

import (
	"cmp"
	"slices"

	"github.com/contain-cli/contain/internal/proc"
)

// LineageEntry is what one scan says of a process: its PID and start
// time (kern.proc.all: with the PID, its identity for the tracker) and
// its lineage (proc_pidinfo PROC_PIDUNIQIDENTIFIERINFO).
type LineageEntry struct {
	PID   int
	Start uint64
	IDs   proc.MacIDs
}

// How Lineage found a descendant.
const (
	ByParent     = "forked by a member"                   // its parent's unique ID at fork
	ByOrigParent = "forked by a member (original parent)" // its parent's pidversion at fork (macOS 15.4+)
)

// Descendant is a process Lineage found, and how.
type Descendant struct {
	LineageEntry
	By string
}

// Lineage knows the session's members by what the kernel keeps of their
// lineage, and finds every process they forked, and those forked, and so
// on, whatever happened to the processes between: re-parenting to
// launchd, setsid, a new process group, an environment written over or
// cleared. It remembers each member's unique ID and every pidversion a
// scan showed it with, after the member has ended too.
//
// A process descends from a member when its ParentUniqueID (its parent
// at fork, kept when re-parented) is a member's, or, since macOS 15.4,
// when its OrigParentIDVersion (its parent's pidversion at fork, kept
// across exec and re-parenting) is a pidversion a member was seen with
// (pidversions come from one counter for every process, taken at each
// fork and exec: a match names that member's program image).
// Unique IDs are handed out in the order of the forks, a parent's always
// below its children's: one pass over a scan sorted by them meets every
// parent before its children, and so finds descendants of descendants in
// the same scan.
//
// What it cannot see:
//   - an intermediate: a process a member forked that forked in turn
//     and ended, all between two scans, never seen: its children name a
//     unique ID and a pidversion no one knows. A
//     scan at each fork (the kqueue's NOTE_FORK) makes it rare; the
//     marker (Marker) covers it.
//   - an orphan that executes a program, since macOS 13: exec sets its
//     ParentUniqueID to its parent's at that moment, launchd's. Before
//     15.4 nothing else names its parent; from 15.4 OrigParentIDVersion
//     still does, when the parent's pidversion at the fork was seen: a
//     parent that forked it from a program it executed after the last
//     scan is not known by that pidversion.
type Lineage struct {
	uids     map[uint64]bool
	versions map[int32]uint64 // pidversion → the member's unique ID
	released map[uint64]bool  // the members let go (Release)
}

// NewLineage starts with no members.
func NewLineage() *Lineage {
	return &Lineage{uids: map[uint64]bool{}, versions: map[int32]uint64{}, released: map[uint64]bool{}}
}

// Add makes a process a member: COMMAND at its start, and any the tracker
// found by other means (its process group, the marker), so that what it
// forks is found by lineage too.
func (l *Lineage) Add(ids proc.MacIDs) {
	if ids.UniqueID != 0 {
		l.uids[ids.UniqueID] = true
	}
	if ids.UniqueID != 0 && ids.IDVersion != 0 {
		l.versions[ids.IDVersion] = ids.UniqueID
	}
}

// Release forgets a member the session let go (a daemon, with
// --allow-daemons): what it forks from now on is not found through it.
// (Those found before stay found: the tracker releases them with it.)
func (l *Lineage) Release(uniqueID uint64) {
	if uniqueID == 0 {
		return
	}
	l.released[uniqueID] = true
	delete(l.uids, uniqueID)
	for v, uid := range l.versions {
		if uid == uniqueID {
			delete(l.versions, v)
		}
	}
}

// Known reports whether the process of that unique ID is a member.
func (l *Lineage) Known(uniqueID uint64) bool { return l.uids[uniqueID] }

// ForkedByReleased reports whether a process was forked by a member the
// session let go (its parent at fork): with --allow-daemons, what a
// spared daemon forked is spared with it, wherever it was re-parented.
func (l *Lineage) ForkedByReleased(ids proc.MacIDs) bool {
	return ids.UniqueID != 0 && l.released[ids.ParentUniqueID]
}

// AnyReleased reports whether a member was let go (Release).
func (l *Lineage) AnyReleased() bool { return len(l.released) > 0 }

// Of says how the process of lineage ids descends from a member:
// ByParent, ByOrigParent, or "" when it does not, when it is a member
// itself, or when its lineage was not read (unique ID 0). It remembers
// nothing: the caller Adds the process once it takes it as a member.
func (l *Lineage) Of(ids proc.MacIDs) string {
	switch {
	case ids.UniqueID == 0, l.uids[ids.UniqueID]:
		return ""
	case l.uids[ids.ParentUniqueID]:
		return ByParent
	case ids.OrigParentIDVersion != 0 && l.versions[ids.OrigParentIDVersion] != 0:
		return ByOrigParent
	}
	return ""
}

// Descendants goes over one scan, in the order of the forks, and returns
// the processes that descend from a member and were not members yet,
// remembering them (and each member's pidversion in this scan: a member
// that executed a program since has a new one, which what it forks after
// names). A process whose unique ID is 0 (its lineage could not be read)
// is left out; so are unknown pidversions of 0 (before 15.4).
func (l *Lineage) Descendants(scan []LineageEntry) []Descendant {
	sorted := slices.Clone(scan)
	slices.SortFunc(sorted, func(a, b LineageEntry) int { return cmp.Compare(a.IDs.UniqueID, b.IDs.UniqueID) })
	var found []Descendant
	for _, p := range sorted {
		if l.uids[p.IDs.UniqueID] {
			l.Add(p.IDs) // a member: its pidversion now
			continue
		}
		if by := l.Of(p.IDs); by != "" {
			l.Add(p.IDs)
			found = append(found, Descendant{LineageEntry: p, By: by})
		}
	}
	return found
}
