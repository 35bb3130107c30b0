//go:build linux || darwin

package registry

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
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
	if !reflect.DeepEqual(r.Members, members) || !reflect.DeepEqual(r.Spared, spared) || !r.Ended {
		t.Errorf("parseRegistry = %+v, want members %v, spared %v, ended", r, members, spared)
	}
	for _, cut := range []string{"end", "end 5\n", "ended\n"} {
		r, err := parseRegistry([]byte("contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\n" + cut))
		if err != nil || r.Ended {
			t.Errorf("%q: ended %v, %v; want not ended", cut, r.Ended, err)
		}
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
	mine := func() []File {
		regs, _ := Read()
		var out []File
		for _, r := range regs {
			if r.Dir == filepath.Join(xdg, "contain") {
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
	if len(regs) != 1 || !regs[0].Ended || !regs[0].Spared[live] {
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

// TestParseRegistryMarker: a marker line gives the session's marker; one
// cut short or malformed gives none.
func TestParseRegistryMarker(t *testing.T) {
	head := "contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\n"
	for body, want := range map[string]uint64{"marker 15747903\n": 15747903, "marker 15747903": 0, "marker x\n": 0, "marker 1 2\n": 0, "": 0} {
		r, err := parseRegistry([]byte(head + body))
		if err != nil || r.Marker != want || len(r.Members) != 1 {
			t.Errorf("%q: marker %d, members %v, %v; want %d", body, r.Marker, r.Members, err, want)
		}
	}
}

// TestParseRegistryLineage: lineage lines (macOS) give the members'
// unique IDs and pidversions; a malformed one is left out.
func TestParseRegistryLineage(t *testing.T) {
	b := "contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\nlineage 9001 77\nlineage 0 1\nlineage x 1\nlineage 9002 -3\nlineage 9003\n"
	r, err := parseRegistry([]byte(b))
	want := []proc.MacIDs{{UniqueID: 9001, IDVersion: 77}, {UniqueID: 9002, IDVersion: -3}}
	if err != nil || !reflect.DeepEqual(r.Lineage, want) {
		t.Errorf("lineage %v, %v; want %v", r.Lineage, err, want)
	}
}
