//go:build linux || darwin

package reap

import (
	"reflect"
	"slices"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/session"
)

// TestWalkRegistered decides on a process table: listed members that run
// with the same start time, and what they started, are the session's;
// a recycled PID, another session's process and the originator of a live
// session (and what it started, listed or not) are not, unless that
// originator started before the session (an outer contain run that
// adopted its orphans).
func TestWalkRegistered(t *testing.T) {
	e := func(pid, ppid int, start uint64) proc.Entry {
		return proc.Entry{PID: pid, PPID: ppid, Pgrp: pid, Start: start}
	}
	entries := []proc.Entry{
		e(100, 1, 50),   // COMMAND
		e(101, 100, 51), // a child, not listed
		e(102, 1, 52),   // listed: a daemonized member (its env written over)
		e(103, 102, 53), // its child
		e(104, 1, 99),   // listed with start 54: its PID was recycled
		e(105, 104, 99), // the stranger's child
		e(106, 100, 55), // carries another session's tag
		e(107, 106, 56), // that session's
		e(108, 100, 57), // the originator of a live session
		e(109, 108, 58), // what it started
		e(110, 100, 59), // a daemon
		e(111, 110, 60), // its child, untagged: a daemon too
		e(112, 100, 40), // a "child" older than its parent: not its
		e(113, 100, 61), // already found by its tag
		e(114, 113, 62), // its child
		{PID: 115, PPID: 100, Start: 63, Zombie: true},
		e(117, 100, 65), // a nested contain run, alive: the originator of a live session
		e(118, 117, 66), // its COMMAND, listed by the outer run too
		e(119, 118, 67), // and what that started
		e(120, 5, 68),   // listed, adopted by 5: an outer contain run (a subreaper), alive
		e(5, 1, 5),
		e(116, 1, 64), // listed, a zombie by now
	}
	entries[len(entries)-1].Zombie = true
	reg := registry.File{Value: "CONTAIN:99", Origin: proc.ID{PID: 99, Start: 10},
		Members: []proc.ID{{PID: 100, Start: 50}, {PID: 102, Start: 52}, {PID: 104, Start: 54}, {PID: 110, Start: 59}, {PID: 116, Start: 64}, {PID: 4000, Start: 1}, {PID: 118, Start: 66}, {PID: 120, Start: 68}}}
	env := func(pid int) envRead {
		switch pid {
		case 106, 107:
			return envRead{readable: true, tagged: true, value: "OTHER:7"}
		case 110:
			return envRead{readable: true, tagged: true, value: "CONTAIN:99", daemon: true}
		case 113:
			return envRead{readable: true, tagged: true, value: "CONTAIN:99"}
		}
		return envRead{} // unreadable or written over
	}
	describe := func(p proc.Entry) (session.Process, bool) {
		return session.Process{PID: p.PID, Start: p.Start}, true
	}
	known := []session.Process{{PID: 113, Start: 61, Value: "CONTAIN:99"}}
	got := walkRegistered([]registry.File{reg}, entries, known, map[int]bool{108: true, 117: true, 5: true}, env, describe, nil)
	var pids, daemons []int
	for _, p := range got {
		pids = append(pids, p.PID)
		if p.Value != "CONTAIN:99" || !p.Registered {
			t.Errorf("%+v: not the session's, or not marked as found through the registry", p)
		}
		if p.Daemon {
			daemons = append(daemons, p.PID)
		}
	}
	slices.Sort(pids)
	slices.Sort(daemons)
	if want := []int{100, 101, 102, 103, 110, 111, 114, 120}; !reflect.DeepEqual(pids, want) {
		t.Errorf("listed %v, want %v", pids, want)
	}
	if want := []int{110, 111}; !reflect.DeepEqual(daemons, want) {
		t.Errorf("daemons %v, want %v", daemons, want)
	}
}
