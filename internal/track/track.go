package track

import (
	"runtime"
	"sort"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/proc"
)

// Tracker follows every process that COMMAND started, by what a scan of
// all processes shows, without help from the kernel: the layer that macOS
// has, and that Linux falls back on without a cgroup or a subreaper.
//
// A process is a member when
//   - it was a member at the last scan (its PID and start time remembered);
//   - its parent is a member (the same PID and start time as remembered),
//     or contain (which adopts orphans as subreaper);
//   - its process group or session is led by a member, or was: a group or
//     session ID cannot be handed out again while the group lives, so it
//     stays the session's while its leader lives (the same PID and start
//     time), and once the leader is gone while a member known from an
//     earlier scan is still in the group: that member shows that the group
//     never emptied. A group whose leader is gone with no known member left
//     in it is dropped, even if a scan shows processes in it: every process
//     of the group may have ended between two scans, and a stranger taken
//     its PID, called setsid, forked, and exited, leaving her child in a
//     group of that ID. (Such a group was still the session's before: its
//     ID free, a stranger of any user joined the run there, counted in its
//     limits, signalled and waited for.) A group or session whose leader is
//     gone admits only processes of contain's own user (Owner): the known
//     member shows that the group is the session's, and the user check keeps
//     a mistake there from reaching another user. A process of another user
//     still joins by its member parent; where the leader lives, by its
//     group or session too (a member that switched users, su or a setuid
//     program): no one else can have that ID then;
//   - it was forked by a member, or by a process that descends from
//     one, by the kernel's record of its parent at fork, whoever its
//     parent is now (UniqueIDs: macOS's unique IDs, Lineage);
//   - it carries the session's tag;
//   - or it holds the session's marker (package marker: the pipe end
//     COMMAND inherited), whatever its lineage, title or environment
//     (Marker: where contain placed one).
//
// Start times are identities, not a clock that orders processes. They are
// ordered on Linux (clock ticks since boot): there a process that started
// before COMMAND is never a member, and a child is never older than its
// parent, which also guards the parent rule against a /proc scan, read
// process by process, that pairs a PPID with a process that took its PID
// meanwhile. On macOS (and Windows) they are the wall clock when the
// process started (XNU's p_starttime is microtime() at fork), and the
// clock can step back (NTP after a wake): a process started later can look
// older than COMMAND, or than its parent. There membership does not depend
// on that order: a parent is the member it is by PID and start time (the
// scan, kern.proc.all, is one snapshot, in which a PPID names the live
// parent), and the processes that were there before COMMAND are known by
// identity instead, as those the first scan showed with an earlier start:
// they can be members only by a member parent or a member's process group
// (which they could not have unless they are in fact new), never by
// contain's parentage, a session or the tag (an orphan of an earlier run
// whose contain had the same PID carries the same tag). A process started
// after the first scan is a member by any rule, whatever its start time.
// (Only a process that only the tag or session would find, started
// between COMMAND and the first scan while the clock stepped back, is
// missed for that.)
//
// What it can miss: a process whose every link to the session is broken
// between two scans: started by a member that exited before a scan saw
// the process, having left the member's process group and session, with
// no tag (cleared, or hidden by macOS). Scans come often while COMMAND
// runs (trackEvery, and on macOS at every fork), and the closing of the
// group stops nothing before it has scanned again.
type Tracker struct {
	self int          // contain: never a member
	Skip map[int]bool // the crash guard, and the like
	// adopters are the processes whose children are members though they
	// are none themselves: contain (self), which adopts orphans as
	// subreaper, and the shim between contain and COMMAND (PID → start;
	// 0: not checked).
	adopters map[int]uint64
	Since    uint64            // COMMAND's start: nothing older is a member
	ordered  bool              // start times never go back (Linux: ticks since boot)
	value    string            // the session's tag value ("": no tag sweep)
	TagOf    func(int) TagRead // the tag of a process
	SidOf    func(int) (int, error)
	// Owner reports whether a process is contain's own user's (its real
	// uid is contain's): asked only of a process that a group or session
	// whose leader is gone would take, once per process. nil: anyone's.
	Owner func(pid int) bool
	// Marker reports whether a process holds the session's marker (nil:
	// the session has none). Asked once per process started after
	// COMMAND: a process holds it from its fork, or never (unless a holder
	// hands it over, which makes it the session's all the same).
	Marker func(pid int) bool
	marked map[proc.ID]bool
	// UniqueIDs reads a process's lineage as the kernel keeps it (nil:
	// the OS keeps none, Linux; macOS: proc.UniqueIDs, LineageReader).
	// Where set, a process forked by a member (its parent at fork, kept
	// when it is re-parented to launchd) or by a descendant of one is a
	// member ("lineage"), although its parent exited before any scan
	// showed the two together: redis's and nginx's daemonize, a double
	// fork. Each process started since COMMAND is read once (by PID and
	// start time, ids), whether it turns out a member or not; a live
	// member again at each scan, which the kqueue wakes at its exec, so
	// that its new pidversion (what macOS 15.4 keeps of the parent of
	// what it forks) is known.
	UniqueIDs func(pid int) (proc.MacIDs, error)
	// Learned, when set, is told each member's lineage as the tracker
	// first learns it: contain tells its crash guard, whose scans then
	// know the members that ended before it (an orphan's original parent).
	Learned func(ids proc.MacIDs)
	lineage *Lineage
	ids     map[proc.ID]proc.MacIDs

	members  map[int]uint64 // PID → start time
	groups   map[int]uint64 // process groups led by a member, or that were: proc.ID → the leader's start
	sessions map[int]uint64 // sessions, the same way
	tags     map[proc.ID]bool
	sids     map[proc.ID]sidRead
	owners   map[proc.ID]bool // Owner's answers
	// headless: the groups and sessions whose leader the last scan did
	// not show, kept because a known member is still in the group.
	headless map[int]bool
	why      map[int]string // how each member was found, for the report
	// listings counts the listings begun (Listing); toldAt is the count
	// when each member was told (RememberAs): a listing begun before
	// cannot show it, so its Update does not take it for gone.
	listings uint64
	toldAt   map[int]uint64
	// Where start times are not ordered: whether a scan was taken, and
	// the processes the first one showed started before COMMAND.
	scanned bool
	before  map[proc.ID]bool

	// Daemon, when set (contain run --allow-daemons: daemon.Judge), is
	// asked of each process as the tracker first finds it, parent the
	// process's parent in the same scan (nil: not in it). A daemon.Yes
	// leaves the session at once, with every descendant it has or will
	// have: none is a member again. daemon.Undecided (its environment is
	// still its parent's: forked, not yet exec'd) makes it a member that
	// is asked again at each scan until it answers; daemon.No is final,
	// whatever it execs later.
	Daemon    func(p proc.Entry, parent *proc.Entry) daemon.Verdict
	released  map[proc.ID]bool
	undecided map[proc.ID]bool
	spared    []proc.Entry // released by the last Update
	// zombie: the last Update read a member as a zombie (ZombieSeen).
	zombie bool
}

// tag is what a process's environment says of the session.
type TagRead int

const (
	TagUnknown TagRead = iota // hidden, unreadable, or gone
	TagOther                  // no tag, or another session's
	TagOurs
)

// New starts tracking from COMMAND (PID pid, started at since),
// which leads its own process group.
func New(self, pid int, since uint64, value string) *Tracker {
	t := &Tracker{self: self, Skip: map[int]bool{}, adopters: map[int]uint64{self: 0}, Since: since,
		ordered: runtime.GOOS == "linux", value: value,
		members: map[int]uint64{}, groups: map[int]uint64{}, sessions: map[int]uint64{},
		tags: map[proc.ID]bool{}, sids: map[proc.ID]sidRead{}, why: map[int]string{}, toldAt: map[int]uint64{}, before: map[proc.ID]bool{},
		owners: map[proc.ID]bool{}, headless: map[int]bool{},
		released: map[proc.ID]bool{}, undecided: map[proc.ID]bool{}, Owner: ownUser()}
	if pid > 0 {
		t.members[pid] = since
		t.groups[pid] = since
		t.why[pid] = "command"
	}
	return t
}

// Adopt makes the children of process pid (started at start) members,
// and never pid itself: the shim, a subreaper between contain and
// COMMAND that holds every orphan of the session.
func (t *Tracker) Adopt(pid int, start uint64) {
	if pid > 1 {
		t.adopters[pid] = start
		t.Skip[pid] = true
	}
}

// NoAdopter: the children of process pid are members only by the other
// rules (a held session's holder, whose children are its own: the
// session's processes are no descendants of it).
func (t *Tracker) NoAdopter(pid int) { delete(t.adopters, pid) }

// Remember adds a process known to be a member (the guard learns them
// from contain).
func (t *Tracker) Remember(pid int, start uint64) { t.RememberAs(pid, start, "tracked") }

// RememberAs adds a process known to be a member, and how it was found.
func (t *Tracker) RememberAs(pid int, start uint64, why string) {
	if pid > 1 && pid != t.self && !t.Skip[pid] && !t.released[proc.ID{PID: pid, Start: start}] {
		t.members[pid] = start
		t.why[pid] = why
		t.toldAt[pid] = t.listings
	}
}

// Listing says that a listing of processes begins, for UpdateListed.
func (t *Tracker) Listing() uint64 {
	t.listings++
	return t.listings
}

// Update takes a new scan and returns the live members (zombies left out),
// oldest first, and those among them that this scan found for the first
// time.
func (t *Tracker) Update(procs []proc.Entry) (live, added []proc.Entry) {
	return t.UpdateListed(0, procs)
}

// UpdateListed is Update of the listing that Listing's answer began
// (0: a listing begun now): a member told (RememberAs) after it began,
// which the listing cannot show, stays a member, for the next listing
// to judge. A program that starts a command in a held session and tells
// the holder while a scan is under way so keeps it in the session.
func (t *Tracker) UpdateListed(listing uint64, procs []proc.Entry) (live, added []proc.Entry) {
	byPID := make(map[int]*proc.Entry, len(procs))
	order := make([]*proc.Entry, 0, len(procs))
	first := !t.scanned
	t.scanned = true
	for i := range procs {
		p := &procs[i]
		byPID[p.PID] = p
		if p.PID <= 1 || p.PID == t.self || t.Skip[p.PID] {
			continue
		}
		if p.Start < t.Since {
			if t.ordered {
				continue // started before COMMAND
			}
			if _, member := t.members[p.PID]; first && !member {
				t.before[proc.ID{PID: p.PID, Start: p.Start}] = true
			}
		}
		order = append(order, p)
	}
	// A member that is gone is forgotten; a PID seen with another start
	// time also ends the group and session it led: the proc.ID was free.
	for pid, start := range t.members {
		p := byPID[pid]
		if p == nil && listing != 0 && t.toldAt[pid] >= listing {
			continue // told after the listing began
		}
		if p == nil || p.Start != start {
			delete(t.members, pid)
			delete(t.why, pid)
			delete(t.toldAt, pid)
		}
	}
	for pid, start := range t.adopters {
		if p := byPID[pid]; start != 0 && p != nil && p.Start != start {
			delete(t.adopters, pid) // its PID was taken by a stranger
		}
	}
	for _, ids := range []map[int]uint64{t.groups, t.sessions} {
		for id, start := range ids {
			if p := byPID[id]; p != nil && p.Start != start {
				delete(ids, id)
			}
		}
	}
	t.keepHeadless(byPID)
	// Parents start before their children: oldest first, and again until
	// nothing changes (start times can be equal at the clock's grain, or
	// out of order where the clock stepped back).
	sort.Slice(order, func(i, j int) bool {
		if order[i].Start != order[j].Start {
			return order[i].Start < order[j].Start
		}
		return order[i].PID < order[j].PID
	})
	isNew := map[int]bool{}
	t.spared = t.spared[:0]
	t.recheck(byPID)
	t.learnMembers(order)
	for changed := true; changed; {
		changed = false
		for _, p := range order {
			if t.released[proc.ID{PID: p.PID, Start: p.Start}] {
				continue
			}
			if t.releasedParent(p, byPID) {
				t.release(*p) // a spared daemon's, member or not
				changed = true
				continue
			}
			if _, ok := t.members[p.PID]; ok {
				continue
			}
			why := t.belongs(p)
			if why == "" {
				continue
			}
			if t.Daemon != nil && !p.Zombie {
				switch t.Daemon(*p, byPID[p.PPID]) {
				case daemon.Yes:
					t.release(*p)
					changed = true
					continue
				case daemon.Undecided:
					t.undecided[proc.ID{PID: p.PID, Start: p.Start}] = true
				}
			}
			t.members[p.PID] = p.Start
			t.why[p.PID] = why
			isNew[p.PID] = true
			changed = true
			t.learn(p, false)
		}
	}
	// A process group no scanned process is in has ended: its proc.ID is free
	// for anyone, and a stranger's group of that proc.ID must not count. (A
	// member could be in it only if the scan had shown it.) A session goes
	// with the group of the same ID: while that group lives the session
	// does, and no one else can have its proc.ID; without the group, the
	// session's other members are still found by the other rules.
	inUse := make(map[int]bool, len(t.groups))
	for i := range procs {
		inUse[procs[i].Pgrp] = true
	}
	for id := range t.groups {
		if !inUse[id] {
			delete(t.groups, id)
		}
	}
	for id := range t.sessions {
		if _, ok := t.groups[id]; !ok {
			delete(t.sessions, id)
		}
	}
	t.zombie = false
	for _, p := range order {
		if _, ok := t.members[p.PID]; !ok {
			continue
		}
		t.leads(p)
		if p.Zombie {
			t.zombie = true
			continue
		}
		live = append(live, *p)
		if isNew[p.PID] {
			added = append(added, *p)
		}
	}
	t.forget(procs)
	return live, added
}

// keepHeadless drops the groups whose leader this scan does not show,
// unless a member known from an earlier scan is still in the group, and
// the sessions whose group is dropped; the groups and sessions kept
// without their leader are noted as headless.
//
// A group lives on after its leader while a process is in it, and its ID
// cannot be handed out again before it empties. Once empty, the ID is
// free: another user can take the PID, call setsid, fork and exit, all
// between two scans, and a scan shows her child in a group (and session)
// of that ID with no leader, as it would show a member's. Only a process
// known to be in the group since before shows that it never emptied. (A
// known member cannot have joined a stranger's group: setpgid joins a
// group only in the caller's own session, and the stranger's setsid made
// hers new.)
func (t *Tracker) keepHeadless(byPID map[int]*proc.Entry) {
	clear(t.headless)
	var inGroup map[int]bool // the groups known members are in
	for id := range t.groups {
		if byPID[id] != nil {
			continue
		}
		if inGroup == nil {
			inGroup = make(map[int]bool, len(t.members))
			for pid := range t.members {
				if p := byPID[pid]; p != nil {
					inGroup[p.Pgrp] = true
				}
			}
		}
		if inGroup[id] {
			t.headless[id] = true
		} else {
			delete(t.groups, id)
		}
	}
	for id := range t.sessions {
		if _, ok := t.groups[id]; !ok {
			delete(t.sessions, id)
		}
	}
}

// admits reports whether group or session id, held by the session, takes
// p: any process while its leader lives, and only contain's user's once
// the leader is gone.
func (t *Tracker) admits(id int, p *proc.Entry) bool {
	if !t.headless[id] || t.Owner == nil {
		return true
	}
	pid := proc.ID{PID: p.PID, Start: p.Start}
	ours, ok := t.owners[pid]
	if !ok {
		ours = t.Owner(p.PID)
		t.owners[pid] = ours
	}
	return ours
}

// releasedParent reports whether p's parent, as this scan shows it, left
// the session as a daemon (or as one's descendant).
func (t *Tracker) releasedParent(p *proc.Entry, byPID map[int]*proc.Entry) bool {
	par := byPID[p.PPID]
	if par != nil && t.released[proc.ID{PID: par.PID, Start: par.Start}] && (!t.ordered || par.Start <= p.Start) {
		return true
	}
	// Or forked by one, and re-parented since (its lineage read once, as
	// the lineage rule would; never for what was there before COMMAND).
	if t.lineage == nil || !t.lineage.AnyReleased() || t.before[proc.ID{PID: p.PID, Start: p.Start}] {
		return false
	}
	return t.lineage.ForkedByReleased(t.idsOf(p, false))
}

// release takes p out of the session for good: it is no member, and
// neither is what it starts.
func (t *Tracker) release(p proc.Entry) {
	id := proc.ID{PID: p.PID, Start: p.Start}
	t.released[id] = true
	delete(t.undecided, id)
	if start, ok := t.members[p.PID]; ok && start == p.Start {
		delete(t.members, p.PID)
		delete(t.why, p.PID)
	}
	for _, ids := range []map[int]uint64{t.groups, t.sessions} {
		if start, ok := ids[p.PID]; ok && start == p.Start {
			delete(ids, p.PID)
		}
	}
	if t.lineage != nil {
		// What it forks from now on is not found through it; what it
		// forked is spared with it (releasedParent).
		if ids, ok := t.ids[id]; ok {
			t.lineage.Release(ids.UniqueID)
		}
	}
	t.spared = append(t.spared, p)
}

// recheck asks Daemon again of the members it could not yet decide.
func (t *Tracker) recheck(byPID map[int]*proc.Entry) {
	for id := range t.undecided {
		p := byPID[id.PID]
		if p == nil || p.Start != id.Start || p.Zombie {
			delete(t.undecided, id)
			continue
		}
		switch t.Daemon(*p, byPID[p.PPID]) {
		case daemon.Yes:
			t.release(*p)
		case daemon.No:
			delete(t.undecided, id)
		}
	}
}

// ZombieSeen reports that the last Update read a member as a zombie. A
// scan of /proc lists the PIDs first and reads each process after: such
// a member may have forked after the listing and ended before it was
// read, so that its child, if it left the member's group and session, is
// in neither this scan nor, once the zombie is reaped and the child
// re-parented, any later one that could tell it. A scan taken now lists
// that child while its parent may still be the zombie. (macOS's scan is
// one snapshot; there a zombie's children are in it.)
func (t *Tracker) ZombieSeen() bool { return t.zombie }

// Spared lists the processes that the last Update took out of the
// session as daemons, or as their descendants.
func (t *Tracker) Spared() []proc.Entry { return t.spared }

// Released reports whether the process left the session as a daemon (or
// as one's descendant).
func (t *Tracker) Released(id proc.ID) bool { return t.released[id] }

// Release takes a process out of the session, as a daemon that contain
// spared (the guard learns them from contain).
func (t *Tracker) Release(pid int, start uint64) { t.ReleaseNow(proc.Entry{PID: pid, Start: start}) }

// ReleaseNow takes p, a member or not yet seen, out of the session, as
// a daemon contain was told of.
func (t *Tracker) ReleaseNow(p proc.Entry) {
	t.release(p)
	t.spared = t.spared[:len(t.spared)-1]
}

// IsMember reports whether the process is a member.
func (t *Tracker) IsMember(id proc.ID) bool {
	start, ok := t.members[id.PID]
	return ok && start == id.Start
}

// belongs decides whether p, not yet a member, is one: how it was found,
// or "".
func (t *Tracker) belongs(p *proc.Entry) string {
	// The parent is the member remembered: update has dropped every member
	// whose PID this scan shows with another start time, or not at all.
	if start, ok := t.members[p.PPID]; ok && (!t.ordered || start <= p.Start) {
		return "descendant"
	}
	before := t.before[proc.ID{PID: p.PID, Start: p.Start}]
	if _, ok := t.adopters[p.PPID]; ok && !before {
		return "descendant" // COMMAND, or an orphan that contain or the shim adopted
	}
	if _, ok := t.groups[p.Pgrp]; ok && t.admits(p.Pgrp, p) {
		return "process group"
	}
	// A zombie too: its children, re-parented already, name it as their
	// parent at fork.
	if !before && t.descends(p) {
		return "lineage"
	}
	if p.Zombie || before {
		return "" // nothing more to read of it, or there before COMMAND
	}
	if len(t.sessions) > 0 {
		sid := t.sid(p)
		if _, ok := t.sessions[sid]; ok && t.admits(sid, p) {
			return "session"
		}
	}
	if t.tagged(p) {
		return "tag"
	}
	if t.holdsMarker(p) {
		return "marker"
	}
	return ""
}

// holdsMarker reports whether p holds the session's marker, read once per
// process.
func (t *Tracker) holdsMarker(p *proc.Entry) bool {
	if t.Marker == nil {
		return false
	}
	id := proc.ID{PID: p.PID, Start: p.Start}
	held, ok := t.marked[id]
	if !ok {
		held = t.Marker(p.PID)
		if t.marked == nil {
			t.marked = map[proc.ID]bool{}
		}
		t.marked[id] = held
	}
	return held
}

// descends reports whether p was forked by a member, or by a process
// that descends from one, as the kernel's lineage says (UniqueIDs).
// Like the parent rule it admits any user's process: a unique ID is
// never handed out again, and no process can change its parent at fork.
func (t *Tracker) descends(p *proc.Entry) bool {
	return t.lineage != nil && t.lineage.Of(t.idsOf(p, false)) != ""
}

// learnMembers gives the lineage every member that this scan shows,
// read again where it lives (its pidversion changes when it executes a
// program); a zombie's is read once.
func (t *Tracker) learnMembers(order []*proc.Entry) {
	if t.UniqueIDs == nil {
		return
	}
	if t.lineage == nil {
		t.lineage, t.ids = NewLineage(), map[proc.ID]proc.MacIDs{}
	}
	for _, p := range order {
		if start, ok := t.members[p.PID]; ok && start == p.Start {
			t.learn(p, !p.Zombie)
		}
	}
}

// learn adds member p to the lineage, its lineage read again if fresh.
func (t *Tracker) learn(p *proc.Entry, fresh bool) {
	if t.lineage == nil {
		return
	}
	ids := t.idsOf(p, fresh)
	if t.Learned != nil && ids.UniqueID != 0 && !t.lineage.Known(ids.UniqueID) {
		t.Learned(ids)
	}
	t.lineage.Add(ids)
}

// Seed gives the lineage members it could not read itself: those contain
// knew of before it died, the ones that ended since among them (the crash
// guard). Without UniqueIDs (Linux) it does nothing.
func (t *Tracker) Seed(members []proc.MacIDs) {
	if t.UniqueIDs == nil {
		return
	}
	if t.lineage == nil {
		t.lineage, t.ids = NewLineage(), map[proc.ID]proc.MacIDs{}
	}
	for _, ids := range members {
		t.lineage.Add(ids)
	}
}

// idsOf is p's lineage, read once per process unless fresh. A read that
// fails (the process gone since the scan) names no one (unique ID 0). A
// read again whose unique ID is not the one first read is another
// process's, which took the PID since the scan: the first read stands.
func (t *Tracker) idsOf(p *proc.Entry, fresh bool) proc.MacIDs {
	id := proc.ID{PID: p.PID, Start: p.Start}
	old, known := t.ids[id]
	if known && !fresh {
		return old
	}
	now, err := t.UniqueIDs(p.PID)
	switch {
	case known && (err != nil || old.UniqueID != 0 && now.UniqueID != old.UniqueID):
		return old
	case err != nil:
		now = proc.MacIDs{}
	}
	t.ids[id] = now
	return now
}

// FoundBy is how member pid was found.
func (t *Tracker) FoundBy(pid int) string { return t.why[pid] }

// leads records the group and session that member p leads.
func (t *Tracker) leads(p *proc.Entry) {
	if p.Pgrp == p.PID {
		t.groups[p.PID] = p.Start
		// setsid makes a process lead both; only then can it lead a
		// session, so a process that leads no group is not asked.
		if t.sid(p) == p.PID {
			t.sessions[p.PID] = p.Start
		}
	}
}

// sid is p's session, from the scan or asked once per process.
func (t *Tracker) sid(p *proc.Entry) int {
	if p.Sid != 0 || t.SidOf == nil {
		return p.Sid
	}
	// Only setsid changes a process's session, and it changes the
	// process group too: an answer holds while the group is the same.
	id := proc.ID{PID: p.PID, Start: p.Start}
	if s, ok := t.sids[id]; ok && s.pgrp == p.Pgrp {
		return s.sid
	}
	s, err := t.SidOf(p.PID)
	if err != nil {
		return 0
	}
	t.sids[id] = sidRead{sid: s, pgrp: p.Pgrp}
	return s
}

// sidRead is a session as asked of the OS, and the process group the
// process was in then.
type sidRead struct{ sid, pgrp int }

// tagged reports whether p carries the session's tag. Each process is
// read once: only an exec changes an environment, and whatever a member
// execs stays a member.
func (t *Tracker) tagged(p *proc.Entry) bool {
	if t.value == "" || t.TagOf == nil {
		return false
	}
	id := proc.ID{PID: p.PID, Start: p.Start}
	if ours, ok := t.tags[id]; ok {
		return ours
	}
	// Unknown is asked again at the next scan: an environment read in
	// the middle of an exec is empty, and the process, a member, would
	// else never be (a nohup'd sleep escaped so, once in a busy run). A
	// kernel thread's, empty for good, and another user's (TagOther) are
	// final.
	r := t.TagOf(p.PID)
	if r == TagUnknown && p.PID != 2 && p.PPID != 2 {
		return false
	}
	ours := r == TagOurs
	t.tags[id] = ours
	return ours
}

// forget drops the cached reads of processes no longer seen, so that a
// long run does not grow without bound.
func (t *Tracker) forget(procs []proc.Entry) {
	if len(t.tags)+len(t.sids)+len(t.before)+len(t.owners)+len(t.marked)+len(t.ids) < 4*len(procs)+1024 {
		return
	}
	seen := make(map[proc.ID]bool, len(procs))
	for _, p := range procs {
		seen[proc.ID{PID: p.PID, Start: p.Start}] = true
	}
	for id := range t.before {
		if !seen[id] {
			delete(t.before, id)
		}
	}
	for id := range t.tags {
		if !seen[id] {
			delete(t.tags, id)
		}
	}
	for id := range t.sids {
		if !seen[id] {
			delete(t.sids, id)
		}
	}
	for id := range t.owners {
		if !seen[id] {
			delete(t.owners, id)
		}
	}
	for id := range t.marked {
		if !seen[id] {
			delete(t.marked, id)
		}
	}
	// The lineage keeps the unique IDs of members that ended: their
	// orphans name them. A released member's read is kept while it is
	// released, so that Release can still take it from the lineage.
	for id := range t.ids {
		if !seen[id] && !t.released[id] {
			delete(t.ids, id)
		}
	}
	for id := range t.released {
		if !seen[id] {
			delete(t.released, id)
		}
	}
}
