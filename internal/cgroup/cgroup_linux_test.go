package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// testCgroupParent makes a directory for a test's cgroups beside the test
// process's own cgroup, and removes it when the test ends.
func testCgroupParent(t *testing.T) (dir, rel string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: making cgroups")
	}
	parent, own, err := ownCgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	name := fmt.Sprintf("limits-test-%d", time.Now().UnixNano())
	dir = filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	return dir, filepath.Join(own, name)
}

// TestCgroupRemoveAfterKill: 200 processes in a group, killed with
// cgroup.kill; the group is removed at once after the kill. The kernel
// refuses (EBUSY) until the last has exited: remove waits for that
// (cgroup.events says populated 0) instead of leaving the group behind.
func TestCgroupRemoveAfterKill(t *testing.T) {
	parent, rel := testCgroupParent(t)
	for round := 0; round < 3; round++ {
		c, err := makeCgroup(parent, rel, fmt.Sprintf("contain-%d", round+1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Rmdir(c.Dir) })
		var cmds []*exec.Cmd
		for i := 0; i < 200; i++ {
			cmd := exec.Command("sleep", "300")
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: c.FD}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		t.Cleanup(func() {
			for _, cmd := range cmds {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
			t.Fatalf("round %d: the group is still there: %v", round, err)
		}
	}
}

func TestCgroupStatParsers(t *testing.T) {
	u, s := parseCPUStat([]byte("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n"))
	if u == nil || s == nil || *u != time.Millisecond || *s != 500*time.Microsecond {
		t.Errorf("cpu.stat: %v %v", u, s)
	}
	r, w := parseIOStat([]byte("8:0 rbytes=100 wbytes=20 rios=1 wios=1\n259:0 rbytes=5 wbytes=1 dbytes=0\n"))
	if *r != 105 || *w != 21 {
		t.Errorf("io.stat: %d %d", *r, *w)
	}
	if r, w := parseIOStat(nil); *r != 0 || *w != 0 {
		t.Errorf("empty io.stat: %d %d", *r, *w)
	}
	if n, ok := parseNumber([]byte("4096\n")); !ok || n != 4096 {
		t.Errorf("memory.peak: %d %v", n, ok)
	}
	if _, ok := parseNumber(nil); ok {
		t.Error("a missing file read as a number")
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
	mnt, _, err := Mount()
	if err != nil {
		t.Skipf("no cgroup2 mounted here: %v", err)
	}
	if usual := UsualMount(); usual != "" && usual != mnt {
		t.Fatalf("statfs found %q, mountinfo %q", usual, mnt)
	}
}

// TestCgroupFilesNoFollow: a name that exists where contain makes its
// group (a directory that holds something, or a link, someone made first)
// is refused, not taken over, and an empty one is replaced by a group of
// contain's own; a cgroup file is written neither through a link nor
// created.
func TestCgroupFilesNoFollow(t *testing.T) {
	parent := t.TempDir()
	target := t.TempDir()
	os.Mkdir(filepath.Join(parent, "contain-1"), 0o755)
	os.WriteFile(filepath.Join(parent, "contain-1", "cgroup.procs"), []byte("1\n"), 0o644)
	os.Symlink(target, filepath.Join(parent, "contain-2"))
	for _, name := range []string{"contain-1", "contain-2"} {
		if g, err := makeCgroup(parent, "", name); err == nil {
			syscall.Close(g.FD)
			t.Errorf("makeCgroup took over an existing %s", name)
		}
	}
	// An empty group of the name, a dead run's whose contain had the same
	// PID, goes; the group made is a new one.
	// (The stale one's mode, 0700, tells it from contain's, 0755.)
	stale := filepath.Join(parent, "contain-3")
	os.Mkdir(stale, 0o700)
	g, err := makeCgroup(parent, "", "contain-3")
	if err != nil {
		t.Fatalf("an empty group of the same name kept contain from making its own: %v", err)
	}
	syscall.Close(g.FD)
	if fi, err := os.Stat(stale); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("makeCgroup took over the empty group instead of making its own (%v, %v)", fi.Mode(), err)
	}
	victim := filepath.Join(target, "victim")
	os.WriteFile(victim, []byte("kept"), 0o644)
	link := filepath.Join(parent, "cgroup.kill")
	os.Symlink(victim, link)
	if err := writeCgroupFile(link, "1"); err == nil {
		t.Error("written through a link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "kept" {
		t.Errorf("the link's target holds %q", b)
	}
	if err := writeCgroupFile(filepath.Join(parent, "cgroup.freeze"), "1"); err == nil {
		t.Error("a cgroup file was created")
	}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.freeze")); err == nil {
		t.Error("a cgroup file was created")
	}
}

// TestContainCgroupPID: the names contain gives its cgroups, the run's
// group, contain's leaf and the systemd scope asked for a run, are found
// by reap; nothing else is.
func TestContainCgroupPID(t *testing.T) {
	for name, want := range map[string]int{"contain-12": 12, "contain-12.self": 12, "contain-12.scope": 12,
		"contain-": 0, "contain-012": 0, "contain-x.scope": 0, "other-12": 0, "contain-12.service": 0,
		"contain-12-ns4026532301": 12, "contain-12-ns4026532301.scope": 12, "contain-12-nsx": 0, "contain-12-4026532301": 0, "contain-12-ns": 0} {
		pid, _, ok := containCgroupPID(name)
		if ok != (want != 0) || pid != want {
			t.Errorf("containCgroupPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
}
