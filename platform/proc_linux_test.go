package platform

import (
	"os"
	"testing"

	"github.com/contain-cli/contain/procfs"
)

func TestReadStatSelf(t *testing.T) {
	st, err := readStat(os.Getpid(), make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getppid() || st.Start == 0 || st.Zombie() {
		t.Fatalf("readStat(self) = %+v, want ppid %d", st, os.Getppid())
	}
}

func TestDescendants(t *testing.T) {
	procs := map[int]procfs.Stat{
		1:  {PID: 1, PPID: 0},
		10: {PID: 10, PPID: 1, State: 'S'},
		11: {PID: 11, PPID: 10, State: 'S'},
		12: {PID: 12, PPID: 11, State: 'Z'},
		13: {PID: 13, PPID: 12, State: 'S'}, // a zombie's child (transient)
		20: {PID: 20, PPID: 1, State: 'S'},
	}
	got := map[int]bool{}
	for _, st := range descendants(procs, 10) {
		got[st.PID] = true
	}
	if len(got) != 2 || !got[11] || !got[13] {
		t.Fatalf("descendants(10) = %v, want 11 and 13 (12 is a zombie)", got)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/sys/fs/cgroup`: "/sys/fs/cgroup", `/mnt/a\040b`: "/mnt/a b", `/x\134y`: `/x\y`, `/bad\9`: `/bad\9`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	cases := map[string][2]string{
		"hybrid":            {"/sys/fs/cgroup/unified", "/"},
		"unified":           {"/sys/fs/cgroup", "/"},
		"container-subtree": {"/sys/fs/cgroup", "/system.slice/docker-abc.scope"},
		"escaped":           {"/mnt/my cgroups", "/"},
	}
	for name, want := range cases {
		b, err := os.ReadFile("testdata/mountinfo/" + name)
		if err != nil {
			t.Fatal(err)
		}
		mnt, root, err := parseMountinfo(b)
		if err != nil || mnt != want[0] || root != want[1] {
			t.Errorf("%s: parseMountinfo = %q, %q, %v; want %q, %q", name, mnt, root, err, want[0], want[1])
		}
	}
	b, _ := os.ReadFile("testdata/mountinfo/v1-only")
	if mnt, _, err := parseMountinfo(b); err == nil {
		t.Errorf("v1-only: found a cgroup2 mount at %q", mnt)
	}
}

// TestCgroup2MountHere: the statfs shortcut and mountinfo agree on this
// machine.
func TestCgroup2MountHere(t *testing.T) {
	mnt, _, err := cgroup2Mount()
	if err != nil {
		t.Skipf("no cgroup2 mounted here: %v", err)
	}
	if usual := usualCgroup2Mount(); usual != "" && usual != mnt {
		t.Fatalf("statfs found %q, mountinfo %q", usual, mnt)
	}
}
