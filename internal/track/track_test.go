package track

import (
	"slices"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// The tracker's rules over plain scans. Contain is PID 10 (started at 5);
// COMMAND is PID 100, started at 1000, and leads group 100.
const (
	tSelf  = 10
	tCmd   = 100
	tSince = 1000
)

func newTestTracker(tags map[int]TagRead) *Tracker {
	t := New(tSelf, tCmd, tSince, "CONTAIN:10")
	t.TagOf = func(pid int) TagRead { return tags[pid] }
	t.Owner = func(pid int) bool { return pid < tOther }
	t.ordered = testOrdered
	return t
}

// tOther: the tests' processes of PID tOther and above are another user's.
const tOther = 600

// testOrdered is whether the tests' trackers take start times as ordered,
// as on Linux; TestTrackRulesUnordered runs the rules' tests again as on
// macOS, where they are not.
var testOrdered = true

func TestTrackRulesUnordered(t *testing.T) {
	testOrdered = false
	defer func() { testOrdered = true }()
	for _, test := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"Children", TestTrackChildren}, {"RemembersReparented", TestTrackRemembersReparented},
		{"ProcessGroup", TestTrackProcessGroup}, {"Session", TestTrackSession},
		{"RecycledPID", TestTrackRecycledPID}, {"Tag", TestTrackTag}, {"NeverMembers", TestTrackNeverMembers},
		{"Zombies", TestTrackZombies}, {"AsksSession", TestTrackAsksSession}, {"Adopted", TestTrackAdopted},
		{"EmptyGroupForgotten", TestTrackEmptyGroupForgotten}, {"ReusedGroupID", TestTrackReusedGroupID},
		{"HeadlessGroup", TestTrackHeadlessGroup},
	} {
		t.Run(test.name, test.f)
	}
}

// shell is contain's own process group and session, where COMMAND's
// ancestors live.
var shell = []proc.Entry{
	{PID: 1, PPID: 0, Pgrp: 1, Sid: 1, Start: 1},
	{PID: 5, PPID: 1, Pgrp: 5, Sid: 5, Start: 2},
	{PID: tSelf, PPID: 5, Pgrp: tSelf, Sid: 5, Start: 5},
	{PID: tCmd, PPID: tSelf, Pgrp: tCmd, Sid: 5, Start: tSince},
}

func scan(ps ...proc.Entry) []proc.Entry { return append(slices.Clone(shell), ps...) }

func pids(ps []proc.Entry) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	slices.Sort(out)
	return out
}

func wantMembers(t *testing.T, tr *Tracker, procs []proc.Entry, want ...int) []proc.Entry {
	t.Helper()
	live, added := tr.Update(procs)
	if got := pids(live); !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	return added
}

func TestTrackChildren(t *testing.T) {
	tr := newTestTracker(nil)
	added := wantMembers(t, tr, scan(
		proc.Entry{PID: 101, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1001},
		proc.Entry{PID: 102, PPID: 101, Pgrp: tCmd, Sid: 5, Start: 1002},
		proc.Entry{PID: 103, PPID: 5, Pgrp: 5, Sid: 5, Start: 1003}, // the shell's, not COMMAND's
	), 100, 101, 102)
	if got := pids(added); !slices.Equal(got, []int{101, 102}) {
		t.Errorf("added %v, want the two new ones", got)
	}
	if added := wantMembers(t, tr, scan(proc.Entry{PID: 101, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1001}), 100, 101); len(added) != 0 {
		t.Errorf("added %v again", pids(added))
	}
}

// A double fork seen in time: the grandchild is remembered, and stays a
// member once its parent exits and it is re-parented to PID 1, even in a
// group and session of its own.
func TestTrackRemembersReparented(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 101, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1001},
		proc.Entry{PID: 102, PPID: 101, Pgrp: 102, Sid: 102, Start: 1002},
	), 100, 101, 102)
	wantMembers(t, tr, scan(proc.Entry{PID: 102, PPID: 1, Pgrp: 102, Sid: 102, Start: 1002}), 100, 102)
	// COMMAND gone too: its group and what is left still are the session's.
	procs := slices.Clone(shell[:3])
	wantMembers(t, tr, append(procs, proc.Entry{PID: 102, PPID: 1, Pgrp: 102, Sid: 102, Start: 1002}), 102)
}

// A double fork missed by the scans: the grandchild is found by COMMAND's
// process group, while COMMAND lives (a zombie holds it too: see
// TestTrackZombies), and once COMMAND has exited while a member seen
// before is still in the group (the group lives on). With neither, the
// group's ID may have been handed out again: see TestTrackReusedGroupID.
func TestTrackProcessGroup(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(), 100)
	wantMembers(t, tr, scan(proc.Entry{PID: 150, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1050}), 100, 150)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 150, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1050},
		proc.Entry{PID: 151, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1051},
	), 100, 150, 151)
	procs := append(slices.Clone(shell[:3]),
		proc.Entry{PID: 150, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1050},
		proc.Entry{PID: 152, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1052})
	wantMembers(t, tr, procs, 150, 152)
}

// TestTrackReusedGroupID: every process of a member's group G ends; between
// two scans another user takes PID G, calls setsid, forks and exits, her
// child left in a group and session of ID G. It is no member: not by the
// group, nor (a grandchild in a group of its own) by the session. Before
// the fix the group, still in use, kept its place, and her processes joined
// the run: counted in its limits, signalled and waited for.
func TestTrackReusedGroupID(t *testing.T) {
	for _, c := range []struct {
		name     string
		stranger []proc.Entry
	}{
		{"group", []proc.Entry{{PID: 700, PPID: 1, Pgrp: 120, Sid: 120, Start: 1100}}},
		{"session", []proc.Entry{{PID: 701, PPID: 1, Pgrp: 701, Sid: 120, Start: 1101}}},
		{"both", []proc.Entry{
			{PID: 700, PPID: 1, Pgrp: 120, Sid: 120, Start: 1100},
			{PID: 701, PPID: 700, Pgrp: 701, Sid: 120, Start: 1101},
			{PID: 702, PPID: 1, Pgrp: 702, Sid: 120, Start: 1102},
		}},
		// Of contain's own user too: her group is no member's.
		{"own user", []proc.Entry{{PID: 400, PPID: 1, Pgrp: 120, Sid: 120, Start: 1100}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTestTracker(nil)
			// A setsid escapee (120) and its child, in its group.
			wantMembers(t, tr, scan(
				proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020},
				proc.Entry{PID: 121, PPID: 120, Pgrp: 120, Sid: 120, Start: 1021},
			), 100, 120, 121)
			// Both end; PID 120 is another's, her leader gone.
			wantMembers(t, tr, scan(c.stranger...), 100)
			wantMembers(t, tr, scan(c.stranger...), 100)
			if _, ok := tr.groups[120]; ok {
				t.Error("the reused group 120 is still the session's")
			}
		})
	}
}

// TestTrackHeadlessGroup: a group whose leader is gone, kept by a member
// known to be in it, takes what contain's user starts in it (a double
// fork missed by the scans), and not another user's process there unless
// its parent is a member; where the leader lives, the group takes any
// user's (a member that switched users: no one else can have the ID).
func TestTrackHeadlessGroup(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020},
		proc.Entry{PID: 121, PPID: 120, Pgrp: 120, Sid: 120, Start: 1021},
	), 100, 120, 121)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020},
		proc.Entry{PID: 121, PPID: 120, Pgrp: 120, Sid: 120, Start: 1021},
		proc.Entry{PID: 650, PPID: 1, Pgrp: 120, Sid: 120, Start: 1022}, // su's double fork
	), 100, 120, 121, 650)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 121, PPID: 1, Pgrp: 120, Sid: 120, Start: 1021},
		proc.Entry{PID: 122, PPID: 1, Pgrp: 120, Sid: 120, Start: 1030},
		proc.Entry{PID: 123, PPID: 1, Pgrp: 123, Sid: 120, Start: 1031},
		proc.Entry{PID: 660, PPID: 1, Pgrp: 120, Sid: 120, Start: 1032},
		proc.Entry{PID: 661, PPID: 1, Pgrp: 661, Sid: 120, Start: 1033},
		proc.Entry{PID: 662, PPID: 121, Pgrp: 120, Sid: 120, Start: 1034},
	), 100, 121, 122, 123, 662)
	// Once no known member is left in the group, it is dropped.
	wantMembers(t, tr, scan(proc.Entry{PID: 124, PPID: 1, Pgrp: 120, Sid: 120, Start: 1040}), 100)
}

// A setsid escapee: its session holds what it started later in another
// process group, while the escapee lives, and after it exited while a
// member seen before is still in its group. With neither, the session's
// ID may have been handed out again (TestTrackReusedGroupID): a process
// that only the session would find, started and left by an escapee that
// exited between two scans, is found by its tag alone.
func TestTrackSession(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020}), 100, 120)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020},
		proc.Entry{PID: 121, PPID: 1, Pgrp: 120, Sid: 120, Start: 1021},
		proc.Entry{PID: 130, PPID: 1, Pgrp: 130, Sid: 120, Start: 1030},
	), 100, 120, 121, 130)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 121, PPID: 1, Pgrp: 120, Sid: 120, Start: 1021},
		proc.Entry{PID: 131, PPID: 1, Pgrp: 131, Sid: 120, Start: 1031},
		proc.Entry{PID: 661, PPID: 1, Pgrp: 661, Sid: 120, Start: 1032}, // another user's
	), 100, 121, 131)
	wantMembers(t, tr, scan(proc.Entry{PID: 132, PPID: 1, Pgrp: 132, Sid: 120, Start: 1033}), 100)
}

// A PID seen again with another start time was free: the process group
// and session it led are no longer the session's, and the new process is
// no member.
func TestTrackRecycledPID(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020}), 100, 120)
	wantMembers(t, tr, scan(), 100) // 120 and its group are gone
	wantMembers(t, tr, scan(
		proc.Entry{PID: 120, PPID: 5, Pgrp: 120, Sid: 120, Start: 1040}, // a stranger took PID 120
		proc.Entry{PID: 121, PPID: 1, Pgrp: 120, Sid: 120, Start: 1041},
	), 100)
	// Once dropped, the group stays dropped.
	wantMembers(t, tr, scan(proc.Entry{PID: 121, PPID: 1, Pgrp: 120, Sid: 120, Start: 1041}), 100)
	// COMMAND's own PID reused after the whole session ended.
	procs := append(slices.Clone(shell[:3]), proc.Entry{PID: tCmd, PPID: 5, Pgrp: tCmd, Sid: 5, Start: 1100})
	wantMembers(t, tr, procs)
}

// The tag finds what no link does; another session's tag, an unreadable
// environment and a process older than COMMAND do not count.
func TestTrackTag(t *testing.T) {
	tags := map[int]TagRead{200: TagOurs, 201: TagOther, 202: TagUnknown, 203: TagOurs}
	tr := newTestTracker(tags)
	reads := 0
	tagOf := tr.TagOf
	tr.TagOf = func(pid int) TagRead { reads++; return tagOf(pid) }
	procs := scan(
		proc.Entry{PID: 200, PPID: 1, Pgrp: 200, Sid: 200, Start: 1100},
		proc.Entry{PID: 201, PPID: 1, Pgrp: 201, Sid: 201, Start: 1100},
		proc.Entry{PID: 202, PPID: 1, Pgrp: 202, Sid: 202, Start: 1100},
		proc.Entry{PID: 203, PPID: 1, Pgrp: 203, Sid: 203, Start: 999}, // older than COMMAND
	)
	wantMembers(t, tr, procs, 100, 200)
	before := reads
	wantMembers(t, tr, procs, 100, 200)
	if reads != before+1 {
		t.Errorf("%d environments read again; each process is read once, but the one not read (202), asked again", reads-before)
	}
}

// An environment read in the middle of an exec is empty (unknown): the
// process is asked again at the next scan, and found a member when its
// tag can be read. (Cached as untagged, a nohup'd sleep escaped so.) A
// kernel thread's, empty for good, is not read again.
func TestTrackTagUnknownAskedAgain(t *testing.T) {
	tags := map[int]TagRead{200: TagUnknown, 300: TagUnknown}
	tr := newTestTracker(tags)
	reads := map[int]int{}
	tagOf := tr.TagOf
	tr.TagOf = func(pid int) TagRead { reads[pid]++; return tagOf(pid) }
	procs := scan(
		proc.Entry{PID: 200, PPID: 1, Pgrp: 200, Sid: 200, Start: 1100},
		proc.Entry{PID: 300, PPID: 2, Pgrp: 0, Sid: 0, Start: 1100}, // a kernel thread
	)
	wantMembers(t, tr, procs, 100)
	tags[200] = TagOurs // its exec is done
	wantMembers(t, tr, procs, 100, 200)
	if reads[300] != 1 {
		t.Errorf("a kernel thread's environment was read %d times, want once", reads[300])
	}
}

// contain, the guard (skip) and PID 1 are never members, whatever they
// carry or whoever their parent is.
func TestTrackNeverMembers(t *testing.T) {
	tr := newTestTracker(map[int]TagRead{tSelf: TagOurs, 300: TagOurs, 1: TagOurs})
	tr.Skip[300] = true
	wantMembers(t, tr, scan(proc.Entry{PID: 300, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1200}), 100)
}

// A zombie is not live, but the group it keeps alive still counts.
func TestTrackZombies(t *testing.T) {
	tr := newTestTracker(nil)
	procs := append(slices.Clone(shell[:3]),
		proc.Entry{PID: tCmd, PPID: tSelf, Pgrp: tCmd, Sid: 5, Start: tSince, Zombie: true},
		proc.Entry{PID: 160, PPID: 1, Pgrp: tCmd, Sid: 5, Start: 1060})
	wantMembers(t, tr, procs, 160)
}

// A member read as a zombie is reported, so that the caller can scan
// again; a zombie that is no member, or a live member, is not.
func TestTrackZombieSeen(t *testing.T) {
	tr := newTestTracker(nil)
	live := append(slices.Clone(shell[:3]), proc.Entry{PID: tCmd, PPID: tSelf, Pgrp: tCmd, Sid: 5, Start: tSince},
		proc.Entry{PID: 170, PPID: 1, Pgrp: 170, Sid: 170, Start: 1070, Zombie: true})
	if tr.Update(live); tr.ZombieSeen() {
		t.Error("a zombie that is no member is reported")
	}
	dead := append(slices.Clone(shell[:3]), proc.Entry{PID: tCmd, PPID: tSelf, Pgrp: tCmd, Sid: 5, Start: tSince, Zombie: true})
	if tr.Update(dead); !tr.ZombieSeen() {
		t.Error("COMMAND read as a zombie is not reported")
	}
	if tr.Update(shell[:3]); tr.ZombieSeen() {
		t.Error("the report outlived the scan that made it")
	}
}

// Where the scan carries no session (macOS), it is asked only of a group
// leader or of a process no other rule took, and once per process.
func TestTrackAsksSession(t *testing.T) {
	tr := newTestTracker(nil)
	sids := map[int]int{120: 120, 130: 120, 140: 5}
	var asked []int
	tr.SidOf = func(pid int) (int, error) { asked = append(asked, pid); return sids[pid], nil }
	noSid := func(ps ...proc.Entry) []proc.Entry {
		out := scan(ps...)
		for i := range out {
			out[i].Sid = 0
		}
		return out
	}
	wantMembers(t, tr, noSid(proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Start: 1020}), 100, 120)
	wantMembers(t, tr, noSid(
		proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Start: 1020},
		proc.Entry{PID: 130, PPID: 1, Pgrp: 130, Start: 1030},
		proc.Entry{PID: 140, PPID: 1, Pgrp: 140, Start: 1040},
	), 100, 120, 130)
	wantMembers(t, tr, noSid(
		proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Start: 1020},
		proc.Entry{PID: 130, PPID: 1, Pgrp: 130, Start: 1030},
		proc.Entry{PID: 140, PPID: 1, Pgrp: 140, Start: 1040},
	), 100, 120, 130)
	slices.Sort(asked)
	if want := []int{100, 120, 130, 140}; !slices.Equal(asked, want) {
		t.Errorf("sessions asked of %v, want %v (each once)", asked, want)
	}
}

// What the guard learns from contain counts as seen.
func TestTrackRemember(t *testing.T) {
	tr := New(tSelf, 0, tSince, "")
	tr.Remember(170, 1070)
	tr.Remember(1, 1)
	wantMembers(t, tr, append(slices.Clone(shell[:3]),
		proc.Entry{PID: 170, PPID: 1, Pgrp: 170, Sid: 170, Start: 1070},
		proc.Entry{PID: 171, PPID: 170, Pgrp: 170, Sid: 170, Start: 1071},
	), 170, 171)
}

// Orphans that contain adopts as subreaper are its children: members.
func TestTrackAdopted(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(proc.Entry{PID: 180, PPID: tSelf, Pgrp: 180, Sid: 180, Start: 1080}), 100, 180)
}

// A group that a scan shows empty is forgotten: a stranger that later gets
// its proc.ID (its leader already gone, as in a shell's `a | b` once a exited)
// is no member.
func TestTrackEmptyGroupForgotten(t *testing.T) {
	tr := newTestTracker(nil)
	wantMembers(t, tr, scan(proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020}), 100, 120)
	wantMembers(t, tr, scan(), 100)
	wantMembers(t, tr, scan(proc.Entry{PID: 121, PPID: 5, Pgrp: 120, Sid: 120, Start: 1500}), 100)
	if len(tr.groups) != 1 || len(tr.sessions) != 0 {
		t.Errorf("groups %v, sessions %v: want COMMAND's group alone", tr.groups, tr.sessions)
	}
}

// macTracker is the tracker as macOS has it: start times are the wall
// clock at fork, which can step back.
func macTracker(tags map[int]TagRead) *Tracker {
	tr := newTestTracker(tags)
	tr.ordered = false
	return tr
}

// TestTrackClockSteppedBack: on macOS, after the clock steps back (NTP
// after a wake), COMMAND's children start "before" COMMAND and before
// their own parents; they are members all the same, found by parentage,
// and stay members once re-parented. With the order that Linux's clock
// ticks give, the same scans would drop them.
func TestTrackClockSteppedBack(t *testing.T) {
	tr := macTracker(nil)
	wantMembers(t, tr, scan(), 100)
	// The clock steps back by 600: a child of COMMAND, a setsid escapee
	// of that child, and a background job of the escapee.
	wantMembers(t, tr, scan(
		proc.Entry{PID: 101, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 400},
		proc.Entry{PID: 102, PPID: 101, Pgrp: 102, Sid: 102, Start: 401},
		proc.Entry{PID: 103, PPID: 102, Pgrp: 102, Sid: 102, Start: 402},
	), 100, 101, 102, 103)
	// 101 exits; its escapee is re-parented to launchd: still a member,
	// and so is what it starts now, in a new group of its own session.
	wantMembers(t, tr, scan(
		proc.Entry{PID: 102, PPID: 1, Pgrp: 102, Sid: 102, Start: 401},
		proc.Entry{PID: 104, PPID: 1, Pgrp: 104, Sid: 102, Start: 403},
	), 100, 102, 104)

	linux := newTestTracker(nil)
	linux.ordered = true
	wantMembers(t, linux, scan(), 100)
	wantMembers(t, linux, scan(proc.Entry{PID: 101, PPID: tCmd, Pgrp: 101, Sid: 101, Start: 400}), 100)
}

// TestTrackSteppedBackTagAndAdopted: after the clock steps back, a
// process that only the tag finds, and a later child of contain, are
// members; what the first scan showed started before COMMAND is not,
// whatever it carries or whoever its parent is.
func TestTrackSteppedBackTagAndAdopted(t *testing.T) {
	tags := map[int]TagRead{200: TagOurs, 203: TagOurs, 204: TagOurs}
	tr := macTracker(tags)
	old := []proc.Entry{
		// An orphan of an earlier contain that had PID 10: the same tag.
		{PID: 203, PPID: 1, Pgrp: 203, Sid: 203, Start: 999},
		// contain's own child from before COMMAND (as the guard).
		{PID: 50, PPID: tSelf, Pgrp: 50, Sid: 50, Start: 900},
	}
	wantMembers(t, tr, scan(old...), 100)
	wantMembers(t, tr, scan(append(old,
		proc.Entry{PID: 200, PPID: 1, Pgrp: 200, Sid: 200, Start: 300},   // found by the tag alone
		proc.Entry{PID: 180, PPID: tSelf, Pgrp: 180, Sid: 5, Start: 301}, // a later child of contain
	)...), 100, 180, 200)
	// A child of the old orphan, started after the first scan, carries the
	// tag too: like any process started after COMMAND, it is taken.
	wantMembers(t, tr, scan(append(old,
		proc.Entry{PID: 204, PPID: 203, Pgrp: 203, Sid: 203, Start: 302},
	)...), 100, 204)
}

// TestTrackSteppedBackRecycledPID: identity, not order, keeps strangers
// out: a member's PID taken by a process whose start time is earlier (the
// clock stepped back) is not the member, and neither its children nor its
// group are the session's.
func TestTrackSteppedBackRecycledPID(t *testing.T) {
	tr := macTracker(nil)
	wantMembers(t, tr, scan(proc.Entry{PID: 120, PPID: tCmd, Pgrp: 120, Sid: 120, Start: 1020}), 100, 120)
	wantMembers(t, tr, scan(
		proc.Entry{PID: 120, PPID: 5, Pgrp: 120, Sid: 120, Start: 400}, // a stranger took PID 120
		proc.Entry{PID: 121, PPID: 120, Pgrp: 120, Sid: 120, Start: 401},
	), 100)
	if _, ok := tr.groups[120]; ok {
		t.Error("the stranger's group is still counted")
	}
}

// TestTrackParentOrderOnLinux: on Linux a process older than the member
// its PPID names is no child of it (a /proc scan can pair a PPID read
// before the PID was taken again); macOS's scan is one snapshot, where
// the PPID is the parent whatever the clock said.
func TestTrackParentOrderOnLinux(t *testing.T) {
	procs := scan(
		proc.Entry{PID: 101, PPID: tCmd, Pgrp: 101, Sid: 101, Start: 1010},
		proc.Entry{PID: 150, PPID: 101, Pgrp: 150, Sid: 150, Start: 1005},
	)
	linux := newTestTracker(nil)
	linux.ordered = true
	wantMembers(t, linux, procs, 100, 101)
	wantMembers(t, macTracker(nil), procs, 100, 101, 150)
}

// A double fork missed by the scans, in a session of its own, with no tag
// (env -i): the marker finds it, and only what holds it; it is read once
// per process, and a process there before COMMAND is never asked.
func TestTrackMarker(t *testing.T) {
	asked := map[int]int{}
	holders := map[int]bool{202: true}
	tr := newTestTracker(map[int]TagRead{202: TagOther, 203: TagOther})
	tr.Marker = func(pid int) bool { asked[pid]++; return holders[pid] }
	first := scan()
	wantMembers(t, tr, first, 100)
	escapee := proc.Entry{PID: 202, PPID: 1, Pgrp: 202, Sid: 202, Start: 1005}
	stranger := proc.Entry{PID: 203, PPID: 1, Pgrp: 203, Sid: 203, Start: 1006}
	wantMembers(t, tr, append(slices.Clone(first), escapee, stranger), 100, 202)
	wantMembers(t, tr, append(slices.Clone(first), escapee, stranger), 100, 202)
	if tr.FoundBy(202) != "marker" {
		t.Errorf("202 found by %q, want marker", tr.FoundBy(202))
	}
	if asked[202] != 1 || asked[203] != 1 {
		t.Errorf("asked %v, want each new process once", asked)
	}
	for _, p := range first {
		if asked[p.PID] != 0 {
			t.Errorf("asked %d, there before COMMAND", p.PID)
		}
	}
	tr.Marker = nil
	tr2 := newTestTracker(map[int]TagRead{202: TagOther})
	wantMembers(t, tr2, first, 100)
	wantMembers(t, tr2, append(slices.Clone(first), escapee), 100)
}

// A member told (RememberAs) while a listing was under way, which that
// listing cannot show, is not taken for gone by its Update: a held
// session's program started it and told the holder during a scan, and
// the close would have left it running (TestRunHold hung so, about one
// run in twenty beside two CPU hogs). The next listing judges it; one
// told before a listing began is gone when that listing lacks it.
func TestTrackMemberToldDuringListing(t *testing.T) {
	tr := newTestTracker(nil)
	named := proc.Entry{PID: 130, PPID: 5, Pgrp: 5, Sid: 5, Start: 1030} // the program's child, untagged
	listing := tr.Listing()
	tr.RememberAs(named.PID, named.Start, "started in the session")
	if live, _ := tr.UpdateListed(listing, scan()); !tr.IsMember(proc.ID{PID: named.PID, Start: named.Start}) || slices.Contains(pids(live), named.PID) {
		t.Fatalf("after the listing begun before it was told: member %t, live %v", tr.IsMember(proc.ID{PID: named.PID, Start: named.Start}), pids(live))
	}
	if live, _ := tr.UpdateListed(tr.Listing(), scan(named)); !slices.Equal(pids(live), []int{tCmd, named.PID}) {
		t.Fatalf("the next listing's members %v, want COMMAND and %d", pids(live), named.PID)
	}
	// Told before the listing began, and not in it: gone.
	tr.RememberAs(131, 1031, "started in the session")
	if tr.UpdateListed(tr.Listing(), scan(named)); tr.IsMember(proc.ID{PID: 131, Start: 1031}) {
		t.Error("a member told before the listing, which lacks it, is kept")
	}
	// Update, of a listing begun now, keeps nothing it lacks.
	if wantMembers(t, tr, scan(), tCmd); tr.IsMember(proc.ID{PID: named.PID, Start: named.Start}) {
		t.Error("Update kept a member its listing lacks")
	}
}
