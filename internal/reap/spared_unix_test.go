//go:build linux || darwin

package reap

import (
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
		func(p proc.Entry) (session.Process, bool) { return session.Process{PID: p.PID, Start: p.Start}, true })
	daemon := map[int]bool{}
	for _, p := range got {
		daemon[p.PID] = p.Daemon
	}
	if want := map[int]bool{200: true, 201: true, 203: false}; !reflect.DeepEqual(daemon, want) {
		t.Errorf("listed (PID: daemon) %v, want %v", daemon, want)
	}
}
