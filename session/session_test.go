package session

import (
	"errors"
	"strings"
	"testing"
)

// world is a process table for lookups: PID -> what is there now.
type world map[int]Originator

func (w world) lookup(ns uint64, pid int) (Originator, error) {
	if pid == 666 {
		return Originator{}, errors.New("permission denied")
	}
	if ns != 0 {
		return Originator{}, errors.New("no namespaces in this world")
	}
	o := w[pid]
	if o.Exists {
		o.ViewPID = pid
	}
	return o, nil
}

func proc(pid int, start uint64, value string) Process {
	return Process{PID: pid, PPID: 1, Start: start, Value: value, UID: 1000}
}

func TestGroupStates(t *testing.T) {
	w := world{
		100: {Exists: true, Start: 50},              // started before its session: alive
		200: {Exists: true, Zombie: true, Start: 1}, // exited, not reaped yet
		300: {Exists: true, Start: 90},              // reused: started after the session
		400: {Exists: true, Start: 70},              // started at the same tick as its earliest member
	}
	daemon := proc(31, 80, "D:500")
	daemon.Daemon = true
	mixedDaemon := proc(41, 80, "M:501")
	mixedDaemon.Daemon = true
	procs := []Process{
		proc(11, 60, "A:100"), proc(10, 55, "A:100"),
		proc(12, 60, "B:200"),
		proc(13, 80, "R:300"), proc(14, 60, "R:300"),
		proc(15, 70, "S:400"),
		proc(16, 60, "G:999"),
		daemon,
		mixedDaemon, proc(42, 81, "M:501"),
		proc(17, 60, "E:666"),
	}
	for _, v := range []string{"X", "X:", ":12", "X:0", "X:-1", "X:abc", "X:4294967296", "X:2147483648", "X Y:1", ""} {
		procs = append(procs, proc(20, 60, v))
	}
	want := map[string]State{
		"A:100": Alive, "B:200": Orphaned, "R:300": Orphaned, "S:400": Alive, "G:999": Orphaned,
		"D:500": Daemon, "M:501": Orphaned, "E:666": Alive,
		"X": Malformed, "X:": Malformed, ":12": Malformed, "X:0": Malformed, "X:-1": Malformed, "X:abc": Malformed,
		"X:4294967296": Malformed, "X:2147483648": Malformed, "X Y:1": Malformed, "": Malformed,
	}
	sessions := Group(procs, w.lookup)
	if len(sessions) != len(want) {
		t.Fatalf("%d sessions, want %d: %+v", len(sessions), len(want), sessions)
	}
	for i, s := range sessions {
		if s.State != want[s.Value] {
			t.Errorf("session %q: %s (%s), want %s", s.Value, s.State, s.Reason, want[s.Value])
		}
		if i > 0 && sessions[i-1].Processes[0].Start > s.Processes[0].Start {
			t.Errorf("session %q comes after a later one", s.Value)
		}
		for j := 1; j < len(s.Processes); j++ {
			if s.Processes[j-1].Start > s.Processes[j].Start {
				t.Errorf("session %q: processes not earliest first", s.Value)
			}
		}
		if s.State != Malformed && (s.Tool == "" || s.PID == 0) {
			t.Errorf("session %q: tool %q pid %d", s.Value, s.Tool, s.PID)
		}
	}
	// The reused PID is named in the reason, with the member it lost to.
	for _, s := range sessions {
		if s.Value == "R:300" && s.Reason != "PID 300 was reused: it started after PID 14 of the session" {
			t.Errorf("R:300 reason: %q", s.Reason)
		}
		if s.Value == "M:501" {
			if s.StateOf(s.Processes[0]) != Daemon || s.StateOf(s.Processes[1]) != Orphaned || s.Daemons() != 1 {
				t.Errorf("M:501: mixed daemon states wrong: %+v", s)
			}
		}
		if s.Value == "A:100" && s.StateOf(s.Processes[0]) != Alive {
			t.Errorf("A:100: process state %s", s.StateOf(s.Processes[0]))
		}
	}
}

func TestFilter(t *testing.T) {
	s := Session{Value: "CLUD:4242", Tool: "CLUD", PID: 4242, State: Orphaned}
	for _, c := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{Tools: []string{"CLUD"}}, true},
		{Filter{Tools: []string{"clud"}}, false},
		{Filter{Tools: []string{"X", "CLUD"}}, true},
		{Filter{Values: []string{"CLUD:4242"}}, true},
		{Filter{Values: []string{"CLUD:4243"}}, false},
		{Filter{Orphaned: true}, true},
		{Filter{Tools: []string{"CLUD"}, Values: []string{"X:1"}}, false},
	} {
		if got := c.f.Match(&s); got != c.want {
			t.Errorf("%+v.Match = %v, want %v", c.f, got, c.want)
		}
	}
	s.State = Daemon
	if (Filter{Orphaned: true}).Match(&s) {
		t.Error("--orphans lists a daemon session")
	}
}

func TestSelect(t *testing.T) {
	w := world{100: {Exists: true, Start: 1}}
	daemon := proc(24, 60, "O:999")
	daemon.Daemon = true
	other := proc(25, 60, "O:999")
	other.UID = 0
	procs := []Process{
		proc(21, 60, "O:999"), proc(1, 60, "O:999"), proc(7, 60, "O:999"), proc(8, 60, "O:999"),
		daemon, other,
		proc(30, 60, "A:100"), proc(31, 60, "X:abc"), proc(32, 60, "P:998"),
	}
	r := Reaper{PID: 7, Ancestors: map[int]bool{8: true, 1: true}, UID: 1000}
	chosen, skipped := Select(Group(procs, w.lookup), Options{}, r)
	want := map[int]string{
		21: "", 1: "PID 1 is never signalled", 7: "contain itself", 8: "an ancestor of this contain",
		24: "a daemon (--include-daemons reaps it)", 25: "belongs to another user (uid 0)", 32: "",
	}
	got := map[int]string{}
	for _, c := range chosen {
		got[c.PID] = c.Skip
	}
	if len(got) != len(want) {
		t.Errorf("chosen %v, want %v", got, want)
	}
	for pid, reason := range want {
		if r, ok := got[pid]; !ok || r != reason {
			t.Errorf("PID %d: skip %q (chosen: %v), want %q", pid, r, ok, reason)
		}
	}
	if len(skipped) != 2 || skipped[0].State != Alive || skipped[1].State != Malformed {
		t.Errorf("skipped sessions: %+v", skipped)
	}

	// Root may reap other users; daemons when asked; filters narrow.
	r.Root = true
	chosen, _ = Select(Group(procs, w.lookup), Options{IncludeDaemons: true, Filter: Filter{Values: []string{"O:999"}}}, r)
	for _, c := range chosen {
		if c.Session != "O:999" {
			t.Errorf("filter let %q through", c.Session)
		}
		if (c.PID == 24 || c.PID == 25) && c.Skip != "" {
			t.Errorf("PID %d skipped: %s", c.PID, c.Skip)
		}
	}
	chosen, _ = Select(Group(procs, w.lookup), Options{Filter: Filter{Tools: []string{"P"}}}, r)
	if len(chosen) != 1 || chosen[0].PID != 32 {
		t.Errorf("--originator P chose %+v", chosen)
	}
	// A session of daemons only is named as skipped unless included.
	_, skipped = Select(Group([]Process{daemon}, w.lookup), Options{}, r)
	if len(skipped) != 1 || skipped[0].State != Daemon {
		t.Errorf("daemon session: skipped %+v", skipped)
	}
}

// TestSelectSparesLiveOriginators: a member of an orphaned session that is
// the originator of a live session, whichever filter names the sessions,
// is left alone and says why; one of a session whose originator cannot be
// checked (counted as alive) too. A PID that names only an orphaned
// session's originator is not protected.
func TestSelectSparesLiveOriginators(t *testing.T) {
	w := world{
		40: {Exists: true, Start: 50}, // the shell: a member of O:999, originator of L:40
		41: {Exists: true, Start: 50}, // a member of O:999, originator of G:41 (reused: started later)
	}
	procs := []Process{
		proc(40, 50, "O:999"), proc(41, 50, "O:999"), proc(42, 50, "O:999"), proc(666, 50, "O:999"),
		proc(43, 60, "L:40"),  // the shell's child: its session is alive
		proc(44, 40, "G:41"),  // started before 41: G:41 is orphaned
		proc(45, 60, "E:666"), // cannot be checked: counted as alive
	}
	r := Reaper{PID: 7, UID: 1000}
	for _, f := range []Filter{{}, {Tools: []string{"O"}}, {Values: []string{"O:999"}}} {
		chosen, _ := Select(Group(procs, w.lookup), Options{Filter: f}, r)
		got := map[int]string{}
		for _, c := range chosen {
			if c.Session == "O:999" {
				got[c.PID] = c.Skip
			}
		}
		want := map[int]string{
			40: "the originator of the live session L:40", 41: "", 42: "",
			666: "the originator of the live session E:666",
		}
		for pid, reason := range want {
			if r, ok := got[pid]; !ok || r != reason {
				t.Errorf("filter %+v: PID %d: skip %q (chosen: %v), want %q", f, pid, r, ok, reason)
			}
		}
	}
	if got := LiveOriginators(Group(procs, w.lookup)); len(got) != 2 || got[40] != "L:40" || got[666] != "E:666" {
		t.Errorf("LiveOriginators: %v", got)
	}
}

// TestGroupOtherUsersTag: anyone can give a process of their own another
// user's session value, even a process older than that session's
// originator (one that exec'd with the value since). Only the
// originator's own user's processes are compared with its start, so a
// live session of root's does not look orphaned, and a root reap does
// not end it, for a forged tag on nobody's older process.
func TestGroupOtherUsersTag(t *testing.T) {
	member := func(pid, uid int, start uint64, value string) Process {
		return Process{PID: pid, PPID: 1, Start: start, Value: value, UID: uid}
	}
	w := world{
		700: {Exists: true, Start: 50, Owned: true, UID: 0},
		701: {Exists: true, Start: 90, Owned: true, UID: 0},
		702: {Exists: true, Start: 90, Owned: true, UID: 0},
		703: {Exists: true, Start: 50}, // its user unknown: every process is compared
	}
	procs := []Process{
		member(10, 65534, 10, "C:700"), member(11, 0, 60, "C:700"), // nobody's older forgery beside root's own
		member(12, 65534, 60, "C:701"), // only nobody's: a PID root's process took since
		member(13, 0, 60, "C:702"),     // root's own, older than the PID's holder: reused
		member(14, 65534, 10, "C:703"), member(15, 0, 60, "C:703"),
	}
	want := map[string]State{"C:700": Alive, "C:701": Orphaned, "C:702": Orphaned, "C:703": Orphaned}
	for _, s := range Group(procs, w.lookup) {
		if s.State != want[s.Value] {
			t.Errorf("session %q: %s (%s), want %s", s.Value, s.State, s.Reason, want[s.Value])
		}
	}
}

// nsWorld is two PID namespaces beside the viewer's: 7 and 8, each with
// its own PID 1 and 303; the viewer's PID 303 is an old process (a
// kernel thread, say) and its PID 1 its init.
type nsWorld map[uint64]map[int]Originator

func (w nsWorld) lookup(ns uint64, pid int) (Originator, error) {
	if ns == 9 {
		return Originator{}, errors.New("processes of that namespace cannot be seen from here")
	}
	return w[ns][pid], nil
}

// TestGroupNamespaces: a session is judged in the namespace its tag was
// made in: two runs that are each PID 1 of their own namespace are two
// sessions, neither the viewer's PID 1; a namespace's live PID 303 is
// alive whatever the viewer's PID 303 is, and a gone one orphaned though
// the viewer's PID 303 runs and is older; a namespace that cannot be
// seen makes the session unknown: not orphaned, not reaped, no veto.
func TestGroupNamespaces(t *testing.T) {
	w := nsWorld{
		0: {1: {Exists: true, Start: 1, ViewPID: 1}, 303: {Exists: true, Start: 2, ViewPID: 303}},
		7: {1: {Exists: true, Start: 100, ViewPID: 5001}, 303: {Exists: true, Start: 110, ViewPID: 5303}},
		8: {1: {Exists: true, Start: 200, ViewPID: 6001}},
	}
	in := func(p Process, ns uint64) Process { p.NS = ns; return p }
	procs := []Process{
		in(proc(5002, 101, "CONTAIN:1"), 7),
		in(proc(6002, 201, "CONTAIN:1"), 8),
		in(proc(5304, 111, "CONTAIN:303"), 7),
		in(proc(6304, 211, "CONTAIN:303"), 8),
		in(proc(7304, 311, "CONTAIN:303"), 9),
	}
	got := map[string]Session{}
	for _, s := range Group(procs, w.lookup) {
		got[s.Key()] = s
	}
	want := map[string]struct {
		state State
		view  int
	}{
		"CONTAIN:1@pidns:7": {Alive, 5001}, "CONTAIN:1@pidns:8": {Alive, 6001},
		"CONTAIN:303@pidns:7": {Alive, 5303}, "CONTAIN:303@pidns:8": {Orphaned, 0},
		"CONTAIN:303@pidns:9": {Unknown, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d sessions, want %d: %v", len(got), len(want), got)
	}
	for k, wnt := range want {
		s, ok := got[k]
		if !ok || s.State != wnt.state || s.ViewPID != wnt.view {
			t.Errorf("%s: %+v, want %s with its originator at PID %d here", k, s, wnt.state, wnt.view)
		}
	}
	if r := got["CONTAIN:303@pidns:8"].Reason; r != "PID 303 of PID namespace 8 is gone" {
		t.Errorf("reason %q", r)
	}
	sessions := Group(procs, w.lookup)
	live := LiveOriginators(sessions)
	if len(live) != 3 || live[5001] == "" || live[6001] == "" || live[5303] == "" || live[1] != "" || live[303] != "" {
		t.Errorf("live originators %v: want the namespaces' originators by their PIDs here, never the viewer's 1 or 303", live)
	}
	chosen, skipped := Select(sessions, Options{}, Reaper{PID: 99, UID: 1000})
	if len(chosen) != 1 || chosen[0].PID != 6304 {
		t.Errorf("chosen %+v: want only the orphaned session of namespace 8", chosen)
	}
	for _, sk := range skipped {
		if sk.Value == "CONTAIN:303" && sk.State == Unknown {
			return
		}
	}
	t.Errorf("skipped %+v: want the unknown session skipped", skipped)
}

// TestGroupNamespaceUnsure: a tag judged in its process's own namespace
// for want of a living ancestor with the tag's PID, while a process of
// the viewer's namespace has that PID and could be its originator (a
// tool that is no subreaper, whose child left the tree before entering
// the namespace): the session is unknown, not orphaned, and not reaped.
func TestGroupNamespaceUnsure(t *testing.T) {
	w := nsWorld{0: {40: {Exists: true, Start: 1, ViewPID: 40}}, 7: {}}
	p := proc(5002, 101, "RP:40")
	p.NS, p.NSUnsure = 7, "PID 40 of this namespace, python3, may be its originator"
	sessions := Group([]Process{p}, w.lookup)
	if len(sessions) != 1 || sessions[0].State != Unknown || !strings.Contains(sessions[0].Reason, "PID 40 of this namespace, python3, may be its originator") {
		t.Fatalf("%+v: want unknown, saying which process here may be its originator", sessions)
	}
	if chosen, _ := Select(sessions, Options{}, Reaper{PID: 99, UID: 1000}); len(chosen) != 0 {
		t.Errorf("chosen %+v: an unknown session is never reaped", chosen)
	}
}
