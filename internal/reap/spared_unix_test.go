//go:build linux || darwin

package reap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// TestParseRegistrySpared: spared lines are members that reap takes for
// daemons; an end line marks a clean end's registry.
func TestParseRegistrySpared(t *testing.T) {
	b := "contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\nmember 4301 911\nspared 4301 911\n" +
		"spared 4302 912\nspared 1 5\nspared 4303\nend\n"
	r, err := parseRegistry([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	members := []proc.ID{{PID: 4300, Start: 910}, {PID: 4301, Start: 911}, {PID: 4301, Start: 911}, {PID: 4302, Start: 912}}
	spared := map[proc.ID]bool{{PID: 4301, Start: 911}: true, {PID: 4302, Start: 912}: true}
	if !reflect.DeepEqual(r.members, members) || !reflect.DeepEqual(r.spared, spared) || !r.ended {
		t.Errorf("parseRegistry = %+v, want members %v, spared %v, ended", r, members, spared)
	}
	for _, cut := range []string{"end", "end 5\n", "ended\n"} {
		r, err := parseRegistry([]byte("contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\n" + cut))
		if err != nil || r.ended {
			t.Errorf("%q: ended %v, %v; want not ended", cut, r.ended, err)
		}
	}
}

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
	reg := registryFile{value: "CONTAIN:99", origin: proc.ID{PID: 99, Start: 10}, ended: true,
		members: []proc.ID{{PID: 203, Start: 73}, {PID: 200, Start: 70}, {PID: 200, Start: 70}, {PID: 202, Start: 72}},
		spared:  map[proc.ID]bool{{PID: 200, Start: 70}: true, {PID: 202, Start: 72}: true}}
	got := walkRegistered([]registryFile{reg}, entries, nil, map[int]bool{},
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

// TestRegistryClose: at a clean end the registry is removed, unless a
// daemon the run spared still runs: then it is kept, with its spared line
// and an end line, read back as a clean end's, and no longer written.
func TestRegistryClose(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	value := fmt.Sprintf("CONTAIN:%d", os.Getpid())
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	live := proc.ID{PID: sleeper.Process.Pid, Start: proc.StartOf(sleeper.Process.Pid)}
	gone := proc.ID{PID: live.PID, Start: live.Start + 1} // the same PID, another start: not it
	mine := func() []registryFile {
		regs, _ := readRegistries()
		var out []registryFile
		for _, r := range regs {
			if r.dir == filepath.Join(xdg, "contain") {
				out = append(out, r)
			}
		}
		return out
	}

	r, err := OpenRegistry(value, 4300, 910)
	if err != nil {
		t.Fatal(err)
	}
	r.Spared(gone.PID, gone.Start)
	if path := r.Close([]proc.ID{gone}); path != "" {
		t.Errorf("kept %s for a spared daemon that is gone", path)
	}
	if regs := mine(); len(regs) != 0 {
		t.Fatalf("after a clean end with nothing spared alive: %+v", regs)
	}

	r, err = OpenRegistry(value, 4300, 910)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Spared(live.PID, live.Start); err != nil {
		t.Fatal(err)
	}
	path := r.Close([]proc.ID{gone, live})
	if want := filepath.Join(xdg, "contain", r.name); path != want {
		t.Fatalf("Close = %q, want %q (kept)", path, want)
	}
	if err := r.Member(4301, 911); err == nil {
		t.Error("a member was written after the close")
	}
	r.Remove() // closed already: leaves the file
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("command 4300 910\nspared %d %d\nend\n", live.PID, live.Start); !strings.HasSuffix(string(b), want) {
		t.Errorf("kept registry:\n%s\nwant it to end with:\n%s", b, want)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the kept file: %v, %v", st.Mode(), err)
	}
	regs := mine()
	if len(regs) != 1 || !regs[0].ended || !regs[0].spared[live] {
		t.Fatalf("read back %+v, want the kept registry, ended, %v spared", regs, live)
	}
	// Its contain (this test) runs: the registry is not pruned; nor would
	// it be with the daemon alive once its contain has ended.
	if _, err := PruneRegistries(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("pruned: %v", err)
	}
	var none *Registry
	if none.Spared(1, 2) != nil || none.Close([]proc.ID{live}) != "" {
		t.Error("a nil registry took a spared daemon or kept something")
	}
}
