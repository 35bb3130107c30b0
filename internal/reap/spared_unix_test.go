//go:build linux || darwin

package reap

import (
	"os"
	"reflect"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/session"
)

// TestWalkRegisteredSpared: a process the registry lists as spared is a
// daemon, and so is what it started, also when it is listed as a member
// first (the shim's watcher writes every child it sees); a spared line
// whose PID now names a process with another start time names nothing.
func TestWalkRegisteredSpared(t *testing.T) {
	e := func(pid, ppid int, start uint64) proc.Entry {
		return proc.Entry{PID: pid, PPID: ppid, Pgrp: pid, Start: start}
	}
	entries := []proc.Entry{
		e(200, 1, 70), // spared, listed as a member first; its title over its environment
		e(201, 200, 71),
		e(202, 1, 99), // spared with start 72: recycled
		e(203, 1, 73), // a member, not spared
	}
	reg := registry.File{Value: "CONTAIN:99", Origin: proc.ID{PID: 99, Start: 10}, Ended: true,
		Members: []proc.ID{{PID: 203, Start: 73}, {PID: 200, Start: 70}, {PID: 200, Start: 70}, {PID: 202, Start: 72}},
		Spared:  map[proc.ID]bool{{PID: 200, Start: 70}: true, {PID: 202, Start: 72}: true}}
	got := walkRegistered([]registry.File{reg}, entries, nil, map[int]bool{},
		func(int) envRead { return envRead{} },
		func(p proc.Entry) (session.Process, bool) { return session.Process{PID: p.PID, Start: p.Start}, true }, nil)
	daemon := map[int]bool{}
	for _, p := range got {
		daemon[p.PID] = p.Daemon
	}
	if want := map[int]bool{200: true, 201: true, 203: false}; !reflect.DeepEqual(daemon, want) {
		t.Errorf("listed (PID: daemon) %v, want %v", daemon, want)
	}
}

// TestWalkRegisteredMarker: a process that holds the session's marker is
// the session's though no line of the registry names it, nor any parent
// (env -i setsid, its parent gone): listed, with what it started; one
// under a spared daemon is a daemon; one that carries another session's
// tag, or that a live nested session's originator started, is not listed.
func TestWalkRegisteredMarker(t *testing.T) {
	e := func(pid, ppid int, start uint64) proc.Entry {
		return proc.Entry{PID: pid, PPID: ppid, Pgrp: pid, Start: start}
	}
	entries := []proc.Entry{
		e(300, 1, 80),   // env -i setsid: a holder, no link left
		e(301, 300, 81), // what it started
		e(310, 1, 70),   // a spared daemon
		e(311, 310, 82), // its child, a holder
		e(320, 1, 83),   // a holder that carries another session's tag
		e(330, 1, 60),   // a live nested contain (its registry alive)
		e(331, 330, 84), // its child, a holder
	}
	reg := registry.File{Value: "CONTAIN:99", Origin: proc.ID{PID: 99, Start: 10}, Marker: 77,
		Members: []proc.ID{{PID: 310, Start: 70}}, Spared: map[proc.ID]bool{{PID: 310, Start: 70}: true}}
	env := func(pid int) envRead {
		if pid == 320 {
			return envRead{readable: true, tagged: true, value: "OTHER:5"}
		}
		return envRead{}
	}
	walk := func(holders map[string][]int) map[int]bool {
		got := walkRegistered([]registry.File{reg}, entries, nil, map[int]bool{330: true}, env,
			func(p proc.Entry) (session.Process, bool) { return session.Process{PID: p.PID, Start: p.Start}, true }, holders)
		daemon := map[int]bool{}
		for _, p := range got {
			daemon[p.PID] = p.Daemon
		}
		return daemon
	}
	got := walk(map[string][]int{"CONTAIN:99": {300, 311, 320, 331}})
	if want := map[int]bool{300: false, 301: false, 310: true, 311: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("listed (PID: daemon) %v, want %v", got, want)
	}
	if got := walk(nil); !reflect.DeepEqual(got, map[int]bool{310: true, 311: true}) {
		t.Errorf("without holders: %v, want the spared daemon and its child only", got)
	}
}

// TestLineageHolders: on macOS, a process whose original parent is a
// member the registry keeps the lineage of (one that ended since), and
// what it forked in turn, are the session's; another user's and a
// stranger's are not; without a lineage reader (Linux) none is.
func TestLineageHolders(t *testing.T) {
	e := func(pid int) proc.Entry { return proc.Entry{PID: pid, PPID: 1, Pgrp: pid, Start: uint64(pid)} }
	entries := []proc.Entry{e(400), e(401), e(402), e(403)}
	ids := map[int]proc.MacIDs{
		400: {UniqueID: 5001, ParentUniqueID: 5000}, // forked by the member 5000, which ended
		401: {UniqueID: 5002, ParentUniqueID: 5001}, // forked by 400
		402: {UniqueID: 5003, ParentUniqueID: 4000}, // a stranger's
		403: {UniqueID: 5004, ParentUniqueID: 5000}, // the member's child, another user's
	}
	read := func(pid int) (proc.MacIDs, error) { return ids[pid], nil }
	uidOf := func(pid int) (int, error) {
		if pid == 403 {
			return os.Geteuid() + 1, nil
		}
		return os.Geteuid(), nil
	}
	reg := registry.File{Value: "CONTAIN:99", Origin: proc.ID{PID: 99, Start: 10}, Lineage: []proc.MacIDs{{UniqueID: 5000}}}
	got := lineageHolders([]registry.File{reg}, ownProcesses(entries, uidOf), read)
	if want := map[string][]int{"CONTAIN:99": {400, 401}}; !reflect.DeepEqual(got, want) {
		t.Errorf("lineageHolders = %v, want %v", got, want)
	}
	if got := lineageHolders([]registry.File{reg}, ownProcesses(entries, uidOf), nil); got != nil {
		t.Errorf("without a lineage reader: %v, want none", got)
	}
}
