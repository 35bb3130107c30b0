package track

import (
	"slices"
	"testing"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/proc"
)

// The daemon rules (--allow-daemons): Daemon's verdict when a process is
// first found, daemon.Undecided asked again, daemon.No final, and a spared
// daemon's descendants spared with it.
func TestTrackDaemons(t *testing.T) {
	verdicts := map[int]daemon.Verdict{}
	asked := map[int]int{}
	tr := newTestTracker(nil)
	tr.Daemon = func(p proc.Entry, _ *proc.Entry) daemon.Verdict { asked[p.PID]++; return verdicts[p.PID] }

	// 200: a daemon from its first sight; 300: first seen unmarked; 400:
	// forked, not yet exec'd.
	verdicts[200], verdicts[300], verdicts[400] = daemon.Yes, daemon.No, daemon.Undecided
	s1 := scan(
		proc.Entry{PID: 200, PPID: tCmd, Pgrp: 200, Sid: 200, Start: 1001},
		proc.Entry{PID: 300, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1002},
		proc.Entry{PID: 400, PPID: tCmd, Pgrp: tCmd, Sid: 5, Start: 1003},
	)
	live, _ := tr.Update(s1)
	if got := pids(live); !slices.Equal(got, []int{tCmd, 300, 400}) {
		t.Fatalf("members %v, want COMMAND, 300 and 400", got)
	}
	if got := pids(tr.Spared()); !slices.Equal(got, []int{200}) {
		t.Fatalf("spared %v, want [200]", got)
	}

	// Now 300 is marked (it exec'd with the mark): still a member, never
	// asked again. 400 has exec'd, marked: it leaves. 200's child, and
	// the child of 400, leave with their parents.
	verdicts[300], verdicts[400] = daemon.Yes, daemon.Yes
	s2 := append(s1,
		proc.Entry{PID: 201, PPID: 200, Pgrp: 200, Sid: 200, Start: 1004},
		proc.Entry{PID: 401, PPID: 400, Pgrp: tCmd, Sid: 5, Start: 1005},
	)
	live, _ = tr.Update(s2)
	if got := pids(live); !slices.Equal(got, []int{tCmd, 300}) {
		t.Fatalf("members %v, want COMMAND and 300", got)
	}
	spared := pids(tr.Spared())
	slices.Sort(spared)
	if !slices.Equal(spared, []int{201, 400, 401}) {
		t.Fatalf("spared %v, want 201, 400, 401", spared)
	}
	if asked[300] != 1 {
		t.Errorf("300 was asked %d times: a daemon.No verdict is final", asked[300])
	}
	if asked[201] != 0 || asked[401] != 0 {
		t.Errorf("a spared daemon's children were asked (%d, %d): they leave with it", asked[201], asked[401])
	}
	// Nothing spared comes back: not by a later scan, not as the cgroup's.
	tr.RememberAs(200, 1001, "cgroup")
	live, _ = tr.Update(s2)
	if got := pids(live); !slices.Equal(got, []int{tCmd, 300}) || len(tr.Spared()) != 0 {
		t.Fatalf("members %v spared %v after a rescan", got, pids(tr.Spared()))
	}
	if !tr.Released(proc.ID{PID: 200, Start: 1001}) || tr.Released(proc.ID{PID: 300, Start: 1002}) {
		t.Errorf("Released: 200 %v, 300 %v", tr.Released(proc.ID{PID: 200, Start: 1001}), tr.Released(proc.ID{PID: 300, Start: 1002}))
	}
}

// TestTrackReleaseNow: a daemon contain was told of leaves with the
// members it had already started.
func TestTrackReleaseNow(t *testing.T) {
	tr := newTestTracker(nil)
	s := scan(
		proc.Entry{PID: 200, PPID: tCmd, Pgrp: 200, Sid: 200, Start: 1001},
		proc.Entry{PID: 201, PPID: 200, Pgrp: 201, Sid: 201, Start: 1002},
	)
	live, _ := tr.Update(s)
	if got := pids(live); !slices.Equal(got, []int{tCmd, 200, 201}) {
		t.Fatalf("members %v", got)
	}
	tr.ReleaseNow(proc.Entry{PID: 200, Start: 1001})
	live, _ = tr.Update(s)
	if got := pids(live); !slices.Equal(got, []int{tCmd}) {
		t.Fatalf("members %v after 200 was released, want COMMAND alone", got)
	}
	if got := pids(tr.Spared()); !slices.Equal(got, []int{201}) {
		t.Errorf("spared by the scan %v, want [201]", got)
	}
}
