package platform

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 4242 4243 4243 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615"
	cases := []struct {
		line  string
		comm  string
		state byte
	}{
		{"4244 (sleep) S" + tail, "sleep", 'S'},
		{"4244 (my prog) R" + tail, "my prog", 'R'},
		{"4244 (a) (b) ) Z" + tail, "a) (b) ", 'Z'},
		{"4244 ((x)) S" + tail, "(x)", 'S'},
		{"4244 () S" + tail, "", 'S'},
	}
	for _, c := range cases {
		st, err := parseStat(4244, []byte(c.line))
		if err != nil {
			t.Errorf("parseStat(%q): %v", c.line, err)
			continue
		}
		if st.comm != c.comm || st.state != c.state || st.ppid != 4242 || st.start != 987654 {
			t.Errorf("parseStat(%q) = %+v", c.line, st)
		}
	}
	for _, bad := range []string{"", "4244", "4244 (sleep", "4244 sleep) S 1", "4244 (sleep) S 1 2 3", "4244 (x) SS" + tail, "4244 (x) S x" + tail} {
		if st, err := parseStat(1, []byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", bad, st)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := readStat(os.Getpid(), make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() || st.start == 0 || st.state == 'Z' {
		t.Fatalf("readStat(self) = %+v, want ppid %d", st, os.Getppid())
	}
}

func TestDescendants(t *testing.T) {
	procs := map[int]procStat{
		1:  {pid: 1, ppid: 0},
		10: {pid: 10, ppid: 1, state: 'S'},
		11: {pid: 11, ppid: 10, state: 'S'},
		12: {pid: 12, ppid: 11, state: 'Z'},
		13: {pid: 13, ppid: 12, state: 'S'}, // a zombie's child (transient)
		20: {pid: 20, ppid: 1, state: 'S'},
	}
	got := map[int]bool{}
	for _, st := range descendants(procs, 10) {
		got[st.pid] = true
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
