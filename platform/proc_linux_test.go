package platform

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
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

// scanEntries shows this process as /proc/self/stat does, with its
// session.
func TestScanEntriesSelf(t *testing.T) {
	procs, err := scanEntries()
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := unix.Getsid(0)
	for _, p := range procs {
		if p.PID == os.Getpid() {
			if p.PPID != os.Getppid() || p.Pgrp != unix.Getpgrp() || p.Sid != sid || p.Start == 0 || p.Zombie {
				t.Fatalf("scanEntries: self is %+v; want parent %d, group %d, session %d", p, os.Getppid(), unix.Getpgrp(), sid)
			}
			return
		}
	}
	t.Fatalf("scanEntries: %d processes, not this one", len(procs))
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
