package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeKernel stands in for cgroupfs over a plain directory tree, with the
// rules Enable and SetLimits meet: a controller is enabled for a group only
// by its parent's cgroup.subtree_control, which is refused (EBUSY) while
// the parent holds processes of its own (root: the tree's top, exempt); a
// limit file exists only where its controller is enabled; a PID written to
// cgroup.procs leaves its old group.
type fakeKernel struct {
	root string
}

func newFakeKernel(t *testing.T) *fakeKernel {
	t.Helper()
	k := &fakeKernel{root: t.TempDir()}
	oldWrite, oldRemove := writeFile, removeDir
	writeFile, removeDir = k.write, os.RemoveAll
	t.Cleanup(func() { writeFile, removeDir = oldWrite, oldRemove })
	return k
}

// group makes a fake cgroup at rel with these controllers available and
// processes.
func (k *fakeKernel) group(t *testing.T, rel, controllers string, procs ...int) string {
	t.Helper()
	dir := filepath.Join(k.root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var ps []string
	for _, p := range procs {
		ps = append(ps, strconv.Itoa(p))
	}
	for name, content := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.type": "domain",
		"cgroup.procs": strings.Join(ps, "\n"), "cpu.stat": "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	return dir
}

func (k *fakeKernel) write(path, s string) error {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	switch {
	case name == "cgroup.subtree_control":
		on := fieldsOf(path)
		for _, w := range strings.Fields(s) {
			c := w[1:]
			if w[0] == '+' {
				// The kernel enables a threaded controller beside
				// processes (and makes the group a thread root).
				if dir != k.root && len(mustPIDs(dir)) > 0 && !threaded[c] {
					return &os.PathError{Op: "write", Path: path, Err: unix.EBUSY}
				}
				if !slices.Contains(fieldsOf(filepath.Join(dir, "cgroup.controllers")), c) {
					return &os.PathError{Op: "write", Path: path, Err: unix.ENOENT}
				}
				if !slices.Contains(on, c) {
					on = append(on, c)
				}
			} else {
				on = slices.DeleteFunc(on, func(x string) bool { return x == c })
			}
		}
		return os.WriteFile(path, []byte(strings.Join(on, " ")), 0o644)
	case name == "cgroup.procs":
		if dir != k.root && slices.ContainsFunc(fieldsOf(filepath.Join(dir, "cgroup.subtree_control")), func(c string) bool { return !threaded[c] }) {
			return &os.PathError{Op: "write", Path: path, Err: unix.EBUSY} // no internal processes
		}
		pid, _ := strconv.Atoi(s)
		filepath.WalkDir(k.root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				left := slices.DeleteFunc(mustPIDs(filepath.Dir(p)), func(x int) bool { return x == pid })
				writePIDs(p, left)
			}
			return nil
		})
		return writePIDs(path, append(mustPIDs(dir), pid))
	default:
		c, _, _ := strings.Cut(name, ".")
		if !slices.Contains(fieldsOf(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control")), c) {
			return &os.PathError{Op: "open", Path: path, Err: unix.ENOENT}
		}
		return os.WriteFile(path, []byte(s), 0o644)
	}
}

// threaded are the controllers the kernel lets work in threaded mode.
var threaded = map[string]bool{CPUController: true, PidsController: true, "cpuset": true, "perf_event": true}

func mustPIDs(dir string) []int {
	p, _ := readPIDs(filepath.Join(dir, "cgroup.procs"))
	return p
}

func writePIDs(path string, pids []int) error {
	var b strings.Builder
	for _, p := range pids {
		fmt.Fprintln(&b, p)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestEnableMovesOnlyOurs: contain (10) and its guard (11) alone in their
// cgroup move into a leaf of their own so that the controllers can be
// enabled; the limits are written; Undo puts everything back.
func TestEnableMovesOnlyOurs(t *testing.T) {
	k := newFakeKernel(t)
	parent := k.group(t, "user.slice/job.scope", "cpu memory pids", 10, 11)
	g := &Group{Dir: k.group(t, "user.slice/job.scope/contain-10", "")}
	ours := func(pid int) bool { return pid == 10 || pid == 11 }

	d, why := g.Enable([]string{MemoryController, PidsController, CPUController}, ours)
	if len(why) != 0 {
		t.Fatalf("why = %v", why)
	}
	if d.Moved() != g.Dir+SelfSuffix || !slices.Equal(mustPIDs(d.Moved()), []int{10, 11}) || len(mustPIDs(parent)) != 0 {
		t.Fatalf("leaf %q holds %v, parent %v", d.Moved(), mustPIDs(d.Moved()), mustPIDs(parent))
	}
	if got := readString(t, parent+"/cgroup.subtree_control"); got != "memory pids cpu" {
		t.Errorf("subtree_control = %q", got)
	}
	set, whyNot := g.SetLimits(Limits{Memory: 100 << 20, Pids: 50, CPUs: 1.5})
	if len(whyNot) != 0 || set[MemoryController] != "cgroup memory.max" || set[PidsController] != "cgroup pids.max" || set[CPUController] != "cgroup cpu.max" {
		t.Errorf("set %v, why %v", set, whyNot)
	}
	for file, want := range map[string]string{"memory.max": "104857600", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "50", "cpu.max": "150000 100000"} {
		if got := readString(t, filepath.Join(g.Dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	os.RemoveAll(g.Dir) // the run's group is gone
	if err := d.Undo(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, parent+"/cgroup.subtree_control"); got != "" {
		t.Errorf("subtree_control after Undo = %q", got)
	}
	if !slices.Equal(mustPIDs(parent), []int{10, 11}) {
		t.Errorf("parent after Undo holds %v", mustPIDs(parent))
	}
	if _, err := os.Stat(g.Dir + SelfSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leaf left behind: %v", err)
	}
}

// TestEnableLeavesOthersAlone: a parent that holds another process (the
// user's shell) is not touched: nothing moves, and every limit says why.
func TestEnableLeavesOthersAlone(t *testing.T) {
	k := newFakeKernel(t)
	parent := k.group(t, "session-1.scope", "memory pids", 10, 99)
	g := &Group{Dir: k.group(t, "session-1.scope/contain-10", "")}
	d, why := g.Enable([]string{MemoryController, PidsController, CPUController}, func(pid int) bool { return pid == 10 })
	if d.Moved() != "" || !slices.Equal(mustPIDs(parent), []int{10, 99}) {
		t.Errorf("moved: leaf %q, parent %v", d.Moved(), mustPIDs(parent))
	}
	if !strings.Contains(why[MemoryController], "1 process(es) besides contain's") || !strings.Contains(why[PidsController], "besides contain's") {
		t.Errorf("why = %v", why)
	}
	if !strings.Contains(why[CPUController], "not available") {
		t.Errorf("why cpu = %q", why[CPUController])
	}
	set, whyNot := g.SetLimits(Limits{Memory: 100 << 20})
	if len(set) != 0 || whyNot[MemoryController] == "" {
		t.Errorf("limits set without the controller: %v %v", set, whyNot)
	}
	if err := d.Undo(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(g.Dir + SelfSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a leaf was made: %v", err)
	}
}

// TestEnableAlreadyOn: controllers the parent already enables (a systemd
// delegated subtree) need no move and are left enabled; a sibling group
// below the parent keeps controllers contain enabled from being disabled.
func TestEnableAlreadyOn(t *testing.T) {
	k := newFakeKernel(t)
	parent := k.group(t, "app.slice", "memory pids", 10)
	os.WriteFile(parent+"/cgroup.subtree_control", []byte("memory"), 0o644)
	g := &Group{Dir: k.group(t, "app.slice/contain-10", "")}
	d, why := g.Enable([]string{MemoryController}, func(int) bool { return true })
	if len(why) != 0 || d.Moved() != "" {
		t.Fatalf("why %v, moved %q", why, d.Moved())
	}
	if err := d.Undo(); err != nil || readString(t, parent+"/cgroup.subtree_control") != "memory" {
		t.Errorf("Undo: %v; subtree_control %q", err, readString(t, parent+"/cgroup.subtree_control"))
	}

	d, why = g.Enable([]string{PidsController}, func(int) bool { return true })
	if len(why) != 0 || d.Moved() == "" {
		t.Fatalf("pids: why %v, moved %q", why, d.Moved())
	}
	k.group(t, "app.slice/someone-else", "")
	os.RemoveAll(g.Dir)
	if err := d.Undo(); err == nil || !strings.Contains(err.Error(), "someone-else") || !strings.Contains(err.Error(), "contain reap removes it") {
		t.Errorf("Undo with a sibling: %v", err)
	}
	if got := readString(t, parent+"/cgroup.subtree_control"); got != "memory pids" {
		t.Errorf("subtree_control = %q, want pids left enabled", got)
	}
	// No process may go back into a parent with controllers enabled:
	// contain's leaf stays, for contain reap.
	if !slices.Equal(mustPIDs(g.Dir+SelfSuffix), []int{10}) || len(mustPIDs(parent)) != 0 {
		t.Errorf("leaf holds %v, parent %v", mustPIDs(g.Dir+SelfSuffix), mustPIDs(parent))
	}
}

// TestEnableThreadedMovesFirst: the kernel enables pids (a threaded
// controller) beside processes, but the parent then becomes a thread
// root below which the run's group is no valid domain (the start into it
// fails, EOPNOTSUPP, as the VM tests found): contain moves out first, for
// a threaded controller as for a domain one.
func TestEnableThreadedMovesFirst(t *testing.T) {
	k := newFakeKernel(t)
	parent := k.group(t, "job", "memory pids cpu", 10)
	g := &Group{Dir: k.group(t, "job/contain-10", "")}
	d, why := g.Enable([]string{PidsController, CPUController}, func(pid int) bool { return pid == 10 })
	if len(why) != 0 {
		t.Fatalf("why = %v", why)
	}
	if d.Moved() != g.Dir+SelfSuffix || len(mustPIDs(parent)) != 0 || !slices.Equal(mustPIDs(d.Moved()), []int{10}) {
		t.Errorf("leaf %q holds %v, parent %v: contain stayed in a thread root", d.Moved(), mustPIDs(d.Moved()), mustPIDs(parent))
	}
	os.RemoveAll(g.Dir)
	if err := d.Undo(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, parent+"/cgroup.subtree_control"); got != "" || !slices.Equal(mustPIDs(parent), []int{10}) {
		t.Errorf("after Undo: subtree_control %q, parent %v", got, mustPIDs(parent))
	}
}

func TestEventsAndUsage(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"memory.events":       "low 0\nhigh 0\nmax 7\noom 2\noom_kill 3\noom_group_kill 1\n",
		"memory.events.local": "low 0\nhigh 0\nmax 5\noom 1\noom_kill 3\n",
		"pids.events":         "max 4\n",
		"cpu.stat":            "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 10\nnr_throttled 6\nthrottled_usec 300000\n",
		"memory.peak":         "123456789\n",
		"pids.peak":           "12\n",
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	g := &Group{Dir: dir}
	e := g.Events()
	want := Events{OOMKills: 3, OwnLimit: 6, ForksRefused: 4, Throttled: 6, ThrottledTime: 300 * time.Millisecond, MemoryPeak: 123456789, PidsPeak: 12}
	if e != want {
		t.Errorf("Events = %+v, want %+v", e, want)
	}
	if cpu, err := g.CPUUsage(); err != nil || cpu != 2500*time.Millisecond {
		t.Errorf("CPUUsage = %v, %v", cpu, err)
	}
	// An OOM kill for an ancestor's limit: counted in memory.events, not
	// in the group's own .local.
	os.WriteFile(filepath.Join(dir, "memory.events.local"), []byte("low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n"), 0o644)
	if e := g.Events(); e.OOMKills != 3 || e.OwnLimit != 0 {
		t.Errorf("ancestor's OOM: %+v", e)
	}
	if e := (&Group{Dir: t.TempDir()}).Events(); e != (Events{}) {
		t.Errorf("no files: %+v", e)
	}
}

// TestEnableRealKernel runs Enable against the kernel's own rule, with
// the hugetlb controller standing in for memory (this machine's hybrid
// layout leaves only hugetlb to cgroup v2): a test cgroup holding one
// process of "ours" refuses the controller (EBUSY) until Enable moves the
// process into its leaf; Undo moves it back. With a process that is not
// ours nothing moves.
func TestEnableRealKernel(t *testing.T) {
	top, _ := testCgroupParent(t)
	grand := filepath.Dir(top)
	const c = "hugetlb"
	if !slices.Contains(fieldsOf(grand+"/cgroup.controllers"), c) {
		t.Skipf("no %s controller in %s to stand in for memory", c, grand)
	}
	if !slices.Contains(fieldsOf(grand+"/cgroup.subtree_control"), c) {
		if err := writeCgroupFile(grand+"/cgroup.subtree_control", "+"+c); err != nil {
			t.Skipf("cannot enable %s in %s: %v", c, grand, err)
		}
		t.Cleanup(func() { writeCgroupFile(grand+"/cgroup.subtree_control", "-"+c) })
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	pid := sleep.Process.Pid
	if err := writeCgroupFile(top+"/cgroup.procs", strconv.Itoa(pid)); err != nil {
		t.Fatal(err)
	}
	// The kernel's rule, first hand.
	if err := writeCgroupFile(top+"/cgroup.subtree_control", "+"+c); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("enabling %s with a process inside: %v, want EBUSY", c, err)
	}
	g, err := makeCgroup(top, "", Prefix+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer g.TryRemove()

	_, why := g.Enable([]string{c}, func(int) bool { return false })
	if !strings.Contains(why[c], "besides contain's") || !slices.Contains(mustPIDs(top), pid) {
		t.Fatalf("not ours: why %q, %s holds %v", why[c], top, mustPIDs(top))
	}

	d, why := g.Enable([]string{c}, func(p int) bool { return p == pid })
	if len(why) != 0 {
		t.Fatalf("why = %v", why)
	}
	if !slices.Equal(mustPIDs(d.Moved()), []int{pid}) {
		t.Errorf("leaf %s holds %v", d.Moved(), mustPIDs(d.Moved()))
	}
	if entries, _ := filepath.Glob(g.Dir + "/hugetlb.*.max"); len(entries) == 0 {
		t.Errorf("%s has no hugetlb files once enabled", g.Dir)
	}
	if err := g.TryRemove(); err != nil {
		t.Fatal(err)
	}
	if err := d.Undo(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mustPIDs(top), pid) || slices.Contains(fieldsOf(top+"/cgroup.subtree_control"), c) {
		t.Errorf("after Undo: %s holds %v, subtree_control %v", top, mustPIDs(top), fieldsOf(top+"/cgroup.subtree_control"))
	}
	if _, err := os.Stat(d.leaf); err == nil {
		t.Errorf("leaf %s left behind", d.leaf)
	}
	// The test's own cgroup must be empty for its removal.
	writeCgroupFile(grand+"/cgroup.procs", strconv.Itoa(pid))
}
