package track

import (
	"maps"
	"slices"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/proc"
)

// The tracker's lineage rule (UniqueIDs) on the fake kernel of
// fakemac_test.go: what contain run's scans on macOS find of daemons
// whose parent exited before a scan saw it, and what they read for it.

// runTracker is contain run's tracker on macOS over session s: contain is
// fmContain, COMMAND s.cmd; the tag read from the fake (ours when the
// environment still shows it), the guard skipped, no marker (these tests
// are about lineage alone). lineage false leaves UniqueIDs nil, as on
// Linux. reads counts the lineage reads by PID.
func runTracker(s *macSession, lineage bool) (tr *Tracker, reads map[int]int) {
	k := s.k
	tr = New(fmContain, s.cmd, k.procs[s.cmd].start, "CONTAIN:10")
	tr.ordered = false // macOS: start times are the wall clock
	tr.Owner = func(int) bool { return true }
	tr.TagOf = func(pid int) TagRead {
		if p := k.procs[pid]; p != nil && p.tagged {
			return TagOurs
		}
		return TagOther
	}
	tr.Skip[s.guard] = true
	reads = map[int]int{}
	if lineage {
		tr.UniqueIDs = func(pid int) (proc.MacIDs, error) {
			reads[pid]++
			return k.uniqueIDs(pid)
		}
	}
	return tr, reads
}

// found is how the tracker found each member of this scan (PID → rule).
func found(tr *Tracker, k *fakeMac) map[int]string {
	out := map[int]string{}
	live, _ := tr.Update(k.entries())
	for _, p := range live {
		out[p.PID] = tr.FoundBy(p.PID)
	}
	return out
}

func wantFound(t *testing.T, got, want map[int]string) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
}

// TestTrackLineageRedis: redis-server --daemonize yes, started by
// COMMAND's shell. daemonize() forks, the parent exits, the child calls
// setsid and writes its title over the environment: re-parented to
// launchd, in a group and session of its own, untagged, all between two
// scans. The scan at the fork saw redis-server's first process; the
// daemon's parent at fork names it. Without lineage (Linux's tracker,
// UniqueIDs nil) the daemon is not found.
func TestTrackLineageRedis(t *testing.T) {
	for _, v := range versions {
		for _, lineage := range []bool{true, false} {
			s := newMacSession(t, v)
			k := s.k
			tr, _ := runTracker(s, lineage)
			r := k.fork(s.cmd)
			wantFound(t, found(tr, k), map[int]string{s.cmd: "command", r: "descendant"})
			k.exec(r)
			d := k.fork(r)
			k.exitReaped(r)
			k.setsid(d)
			k.procs[d].tagged = false
			want := map[int]string{s.cmd: "command"}
			if lineage {
				want[d] = "lineage"
			}
			wantFound(t, found(tr, k), want)
		}
	}
}

// TestTrackLineageNginx: nginx's ngx_daemon forks, the parent exits, the
// master calls setsid and forks its workers, all between two scans. The
// master is found by its parent at fork; its workers, its children, by
// the parent rule in the same scan.
func TestTrackLineageNginx(t *testing.T) {
	for _, v := range versions {
		s := newMacSession(t, v)
		k := s.k
		tr, _ := runTracker(s, true)
		n := k.fork(s.cmd)
		found(tr, k)
		k.exec(n)
		m := k.fork(n)
		k.exitReaped(n)
		k.setsid(m)
		k.procs[m].tagged = false
		w1, w2 := k.fork(m), k.fork(m)
		wantFound(t, found(tr, k), map[int]string{s.cmd: "command", m: "lineage", w1: "descendant", w2: "descendant"})
	}
}

// TestTrackLineageDoubleFork: perl -e 'fork and exit; setsid; fork and
// exit; exec sleep' under env -i: no tag anywhere, every intermediate
// gone. Whether lineage finds the last process depends on the scans and
// on macOS, as Lineage's own test says (TestLineageDoubleFork); with a
// scan at each fork it is found on every version, the intermediate's
// unique ID (its parent at fork) naming it, or on 13+ after its exec, by
// 15.4's original parent; on 13-15.3 the exec hides it unless a scan
// came between the fork and the exec.
func TestTrackLineageDoubleFork(t *testing.T) {
	for _, c := range []struct {
		v          macOS
		scanBefore bool // a scan between the last fork and the exec
		found      bool
	}{
		{macOS12, false, true},
		{macOS13, false, false}, // launchd's unique ID after the exec, no original parent
		{macOS13, true, true},
		{macOS154, false, true},
	} {
		s := newMacSession(t, c.v)
		k := s.k
		tr, _ := runTracker(s, true)
		k.execClean(s.cmd) // env -i perl
		a := k.fork(s.cmd)
		found(tr, k) // the kqueue's scan at the fork
		k.setsid(a)
		b := k.fork(a)
		k.exitReaped(a)
		if c.scanBefore {
			found(tr, k)
		}
		k.execClean(b)
		want := map[int]string{s.cmd: "command"}
		if c.found {
			want[b] = "lineage"
		}
		wantFound(t, found(tr, k), want)
	}
}

// TestTrackLineageEnvI: setsid env -i sh -c 'sleep 100 &', whose shell
// exits once it has forked sleep: no tag, not COMMAND's group or
// session, its parent gone. The kqueue woke a scan at the shell's fork
// and at its exec; sleep's parent at fork (and at its exec, before the
// shell exited) is the shell.
func TestTrackLineageEnvI(t *testing.T) {
	for _, v := range versions {
		s := newMacSession(t, v)
		k := s.k
		tr, _ := runTracker(s, true)
		e := k.fork(s.cmd)
		found(tr, k)
		k.setsid(e)
		k.execClean(e)
		found(tr, k)
		sl := k.fork(e)
		k.execClean(sl)
		k.exitReaped(e)
		wantFound(t, found(tr, k), map[int]string{s.cmd: "command", sl: "lineage"})
	}
}

// TestTrackLineageChain: a member that the scan finds by another rule
// (its tag) in the same scan as its re-parented child: the child is
// found by lineage in that scan, and a zombie on the way is a member
// too, so that what it forked names it.
func TestTrackLineageChain(t *testing.T) {
	s := newMacSession(t, macOS13)
	k := s.k
	tr, _ := runTracker(s, true)
	// Forked by COMMAND, gone from its group (setsid) and re-parented
	// (its parent exited): only its tag is left, and it is not read
	// before a scan.
	p := k.fork(s.cmd)
	q := k.fork(p)
	k.exitReaped(p)
	k.setsid(q)
	c := k.fork(q) // the tag's find's child: untagged, re-parented
	z := k.fork(q) // and a zombie's child: z exits unreaped by q
	zc := k.fork(z)
	k.exit(z)
	k.setsid(c)
	k.procs[c].tagged = false
	k.procs[zc].tagged = false
	k.setsid(zc)
	got := found(tr, k)
	wantFound(t, got, map[int]string{s.cmd: "command", q: "tag", c: "descendant", zc: "lineage"})
	k.exitReaped(q) // c is re-parented now
	wantFound(t, found(tr, k), map[int]string{s.cmd: "command", c: "descendant", zc: "lineage"})
	if !tr.IsMember(proc.ID{PID: z, Start: k.procs[z].start}) {
		t.Errorf("the zombie %d is no member", z)
	}
}

// TestTrackLineageReads: each process started since COMMAND is read once
// (by PID and start time); a live member at every scan (its pidversion
// after an exec); a zombie member once; a process that was there
// before COMMAND never.
func TestTrackLineageReads(t *testing.T) {
	s := newMacSession(t, macOS154)
	k := s.k
	tr, reads := runTracker(s, true)
	stranger := s.guard - 1 // launchd's, forked after COMMAND
	m := k.fork(s.cmd)
	for range 3 {
		found(tr, k)
	}
	want := map[int]int{s.cmd: 3, m: 3, stranger: 1}
	if !maps.Equal(reads, want) {
		t.Errorf("reads %v, want %v", reads, want)
	}
	// A member executes a program, forks and ends; what it forked
	// executes too (on 15.4 its parent at fork is then launchd's): its
	// original parent's pidversion is the one the member got at its
	// exec, which the scan after the exec read.
	k.exec(m)
	found(tr, k)
	o := k.fork(m)
	k.exitReaped(m)
	k.exec(o)
	k.setsid(o)
	wantFound(t, found(tr, k), map[int]string{s.cmd: "command", o: "lineage"})
	// Nothing that was there before COMMAND's first scan is read.
	for _, pid := range []int{fmLaunchd, fmContain, s.guard} {
		if reads[pid] != 0 {
			t.Errorf("%d read %d times", pid, reads[pid])
		}
	}
}

// TestTrackLineageReleased: with --allow-daemons, a daemon that leaves
// the session (forked, asked again after its exec) leads no one back:
// what it forks after, re-parented or not, is spared with it, and
// nothing is found through it.
func TestTrackLineageReleased(t *testing.T) {
	s := newMacSession(t, macOS13)
	k := s.k
	tr, _ := runTracker(s, true)
	marked := map[int]bool{}
	d := k.fork(s.cmd)
	tr.Daemon = func(p proc.Entry, _ *proc.Entry) daemon.Verdict {
		switch {
		case marked[p.PID]:
			return daemon.Yes
		case p.PID == d:
			return daemon.Undecided // forked, not yet executed
		}
		return daemon.No
	}
	wantFound(t, found(tr, k), map[int]string{s.cmd: "command", d: "descendant"})
	k.exec(d)
	marked[d] = true
	c := k.fork(d)
	k.setsid(d)
	k.setsid(c)
	wantFound(t, found(tr, k), map[int]string{s.cmd: "command"})
	late := k.fork(d)
	dUID := k.ids(d).UniqueID
	k.exitReaped(d)
	k.setsid(late)
	wantFound(t, found(tr, k), map[int]string{s.cmd: "command"})
	for _, pid := range []int{c, late} {
		if !tr.Released(proc.ID{PID: pid, Start: k.procs[pid].start}) {
			t.Errorf("%d, forked by the daemon, was not spared with it", pid)
		}
	}
	if tr.lineage.Known(dUID) {
		t.Error("the daemon is still in the lineage")
	}
}

// TestTrackLineageNilUnchanged: a tracker without UniqueIDs (Linux's)
// finds exactly what it found before lineage existed, and a tracker
// whose reads all fail (every process gone by then) finds the same:
// the rule adds members, never takes any away. Every scenario above is
// run both ways.
func TestTrackLineageNilUnchanged(t *testing.T) {
	scenario := func(tr *Tracker, s *macSession) []map[int]string {
		k := s.k
		var out []map[int]string
		r := k.fork(s.cmd)
		out = append(out, found(tr, k))
		k.exec(r)
		d := k.fork(r)
		k.exitReaped(r)
		k.setsid(d)
		k.procs[d].tagged = false
		w := k.fork(d)
		g := k.fork(s.cmd) // stays in COMMAND's group
		k.fork(g)
		out = append(out, found(tr, k))
		k.exitReaped(g)
		out = append(out, found(tr, k))
		_ = w
		return out
	}
	for _, v := range versions {
		a := newMacSession(t, v)
		nilTr, _ := runTracker(a, false)
		withoutReads := scenario(nilTr, a)
		if nilTr.lineage != nil || nilTr.ids != nil {
			t.Fatal("a tracker without UniqueIDs keeps a lineage")
		}
		b := newMacSession(t, v)
		failing, _ := runTracker(b, true)
		failing.UniqueIDs = func(int) (proc.MacIDs, error) { return proc.MacIDs{}, syscall.ESRCH }
		withFailures := scenario(failing, b)
		if !slices.EqualFunc(withoutReads, withFailures, maps.Equal) {
			t.Errorf("%v: without lineage %v, with failing reads %v", v, withoutReads, withFailures)
		}
		for _, scan := range withoutReads {
			for pid, by := range scan {
				if by == "lineage" {
					t.Errorf("%v: %d found by lineage without UniqueIDs", v, pid)
				}
			}
		}
	}
}

// TestTrackLineagePIDTaken: a member read again whose PID now names
// another process (another unique ID) keeps the lineage first read: the
// stranger's children are not taken.
func TestTrackLineagePIDTaken(t *testing.T) {
	s := newMacSession(t, macOS13)
	k := s.k
	tr, _ := runTracker(s, true)
	m := k.fork(s.cmd)
	found(tr, k)
	real := tr.UniqueIDs
	strangerUID := k.ids(s.guard - 1).UniqueID // launchd's daemon
	tr.UniqueIDs = func(pid int) (proc.MacIDs, error) {
		if pid == m {
			return proc.MacIDs{UniqueID: strangerUID, ParentUniqueID: 1}, nil
		}
		return real(pid)
	}
	found(tr, k)
	tr.UniqueIDs = real
	c := k.fork(s.guard - 1) // the stranger's child
	k.setsid(c)
	if got := found(tr, k); got[c] != "" {
		t.Errorf("the stranger's child %d was taken: %v", c, got)
	}
}

// TestTrackLineageGuard: contain's tracker tells the guard each member's
// lineage once (Learned), and the guard's tracker, seeded with them after
// contain died (Seed), finds by lineage a daemon whose parent, a member
// contain saw, ended before the guard's first scan; unseeded, it does not.
func TestTrackLineageGuard(t *testing.T) {
	for _, v := range versions {
		s := newMacSession(t, v)
		k := s.k
		tr, _ := runTracker(s, true)
		var told []proc.MacIDs
		tr.Learned = func(ids proc.MacIDs) { told = append(told, ids) }
		r := k.fork(s.cmd)
		wantFound(t, found(tr, k), map[int]string{s.cmd: "command", r: "descendant"})
		found(tr, k) // a second scan tells nothing again
		if len(told) != 2 {
			t.Fatalf("%s: told %d lineages, want COMMAND's and the child's once each: %v", v, len(told), told)
		}
		// contain dies; the member forks a daemon and exits, unseen.
		d := k.fork(r)
		k.exitReaped(r)
		k.setsid(d)
		k.procs[d].tagged = false
		for _, seeded := range []bool{true, false} {
			g, _ := runTracker(s, true)
			g.members = map[int]uint64{}
			if seeded {
				g.Seed(told)
			}
			got := found(g, k)
			if seeded && got[d] != "lineage" || !seeded && got[d] != "" {
				t.Errorf("%s: the guard's tracker, seeded %v, found the daemon by %q", v, seeded, got[d])
			}
		}
	}
}
