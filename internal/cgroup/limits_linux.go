package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel limits: what the kernel holds of a run's limits, in the run's
// group, once the controllers they need are enabled in its parent.
//
// A controller is enabled for a group by its parent's
// cgroup.subtree_control, which the kernel refuses (EBUSY) for a parent
// that holds processes of its own, the root excepted: the no-internal-
// process rule. contain's group is made beside contain, in contain's own
// cgroup; when that holds only contain and its own children (the crash
// guard), they move into a leaf of their own, contain-PID.self, as
// systemd's delegated managers, nsjail and crun move themselves, and the
// controllers are enabled. A parent that holds any other process is left
// as it is: contain never moves what is not its own, and samples instead.

// Controller names the cgroup controller a limit needs.
const (
	MemoryController = "memory"
	PidsController   = "pids"
	CPUController    = "cpu"
)

// SelfSuffix ends the name of the leaf contain moves itself into.
const SelfSuffix = ".self"

// Delegation is what contain changed in its parent cgroup to enable
// controllers for its group, to be undone when the group is gone.
type Delegation struct {
	parent  string
	enabled []string // controllers contain enabled in the parent
	leaf    string   // where contain's own processes went ("": not moved)
}

// Enable makes the controllers in want available in g: those its parent
// has (cgroup.controllers) and enables, or can be made to enable by
// moving ours — every process in the parent must satisfy it — into a
// leaf. It returns what it changed (to Undo), and why each controller it
// could not enable is missing.
func (g *Group) Enable(want []string, ours func(pid int) bool) (*Delegation, map[string]string) {
	why := map[string]string{}
	parent := filepath.Dir(g.Dir)
	d := &Delegation{parent: parent}
	avail := fieldsOf(filepath.Join(parent, "cgroup.controllers"))
	on := fieldsOf(filepath.Join(parent, "cgroup.subtree_control"))
	var need []string
	for _, c := range want {
		switch {
		case !slices.Contains(avail, c):
			why[c] = fmt.Sprintf("the %s controller is not available in %s (not in its cgroup.controllers)", c, parent)
		case !slices.Contains(on, c):
			need = append(need, c)
		}
	}
	if len(need) == 0 {
		return d, why
	}
	// A parent that holds processes must be left by them first: the
	// kernel refuses a domain controller (memory) beside them (EBUSY),
	// and enables a threaded one (pids, cpu) but makes the parent a
	// thread root, below which the run's group is no valid domain, so
	// that the start into it fails (EOPNOTSUPP). The root is exempt.
	var err error
	if procs, _ := readPIDs(filepath.Join(parent, "cgroup.procs")); len(procs) > 0 && !isRoot(parent) {
		err = d.moveOurs(procs, ours, g)
	}
	if err == nil {
		if err = d.subtree(need, "+"); err != nil {
			d.moveBack()
		}
	}
	if err != nil {
		for _, c := range need {
			why[c] = err.Error()
		}
		return d, why
	}
	d.enabled = need
	return d, why
}

// subtree writes "+c" (or "-c") for each controller to the parent's
// cgroup.subtree_control.
func (d *Delegation) subtree(cs []string, sign string) error {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sign + c)
	}
	if err := writeFile(filepath.Join(d.parent, "cgroup.subtree_control"), b.String()); err != nil {
		return fmt.Errorf("cannot enable %s in %s: %w", strings.Join(cs, ", "), d.parent, err)
	}
	return nil
}

// moveOurs moves every process of the parent (procs) into a leaf of
// contain's own, if each is ours; else it moves nothing.
func (d *Delegation) moveOurs(procs []int, ours func(int) bool, g *Group) error {
	var others int
	for _, p := range procs {
		if !ours(p) {
			others++
		}
	}
	if others > 0 {
		return fmt.Errorf("%s holds %d process(es) besides contain's, so the kernel cannot enable controllers below it (no internal processes), and contain moves no process but its own", d.parent, others)
	}
	leaf := g.Dir + SelfSuffix
	if err := unix.Mkdir(leaf, 0o755); err != nil {
		return fmt.Errorf("cannot create cgroup %s: %w", leaf, err)
	}
	d.leaf = leaf
	for _, p := range procs {
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(p)); err != nil && !errors.Is(err, unix.ESRCH) {
			d.moveBack()
			return fmt.Errorf("cannot move contain's process %d into %s: %w", p, leaf, err)
		}
	}
	return nil
}

// moveBack moves what is in the leaf back to the parent and removes it.
func (d *Delegation) moveBack() {
	if d.leaf == "" {
		return
	}
	procs, _ := readPIDs(filepath.Join(d.leaf, "cgroup.procs"))
	for _, p := range procs {
		writeFile(filepath.Join(d.parent, "cgroup.procs"), strconv.Itoa(p))
	}
	// A process that was exiting may hold the leaf a moment longer.
	for i := 0; i < 100 && removeDir(d.leaf) == unix.EBUSY; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	d.leaf = ""
}

// Moved is the leaf contain moved itself into ("": none).
func (d *Delegation) Moved() string { return d.leaf }

// Undo puts the parent back as it was, once the group is gone: the
// controllers contain enabled are disabled again, and contain's processes
// go back. When another group below the parent now uses the parent's
// controllers, they stay enabled, and so no process may go back into the
// parent: contain's leaf stays, empty once contain has exited, for
// contain reap. It returns what it could not undo.
func (d *Delegation) Undo() error {
	if d == nil {
		return nil
	}
	if len(d.enabled) > 0 {
		if others := d.otherChildren(); others != "" {
			err := fmt.Errorf("left %s enabled in %s: %s is below it too", strings.Join(d.enabled, ", "), d.parent, others)
			if d.leaf != "" {
				err = fmt.Errorf("%w; so %s stays (no process may go back into %s while controllers are enabled there), empty once contain has exited: contain reap removes it", err, d.leaf, d.parent)
			}
			d.enabled, d.leaf = nil, ""
			return err
		}
		err := d.subtree(d.enabled, "-")
		d.enabled = nil
		if err != nil {
			d.leaf = "" // nothing may go back into the parent
			return err
		}
	}
	d.moveBack()
	return nil
}

// Delegated is a delegation contain made and told its crash guard of:
// controllers enabled in parent, and the leaf its processes went to. The
// guard undoes it when contain has died.
func Delegated(parent, leaf string, enabled []string) *Delegation {
	return &Delegation{parent: parent, leaf: leaf, enabled: enabled}
}

// Parent is the cgroup whose controllers contain enabled; Enabled, those
// controllers.
func (d *Delegation) Parent() string    { return d.parent }
func (d *Delegation) Enabled() []string { return d.enabled }

// Missing names the controllers of want that the cgroup v2 hierarchy
// contain sees has none of (its top's cgroup.controllers): no cgroup made
// anywhere in it, by contain or by systemd, could have them (a hybrid
// layout, whose controllers are cgroup v1's).
func Missing(want []string) []string {
	mnt, err := top()
	if err != nil {
		return want
	}
	have := fieldsOf(filepath.Join(mnt, "cgroup.controllers"))
	var out []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

// isRoot reports whether dir is the root of its hierarchy, exempt from
// the no-internal-process rule (the root has no cgroup.type).
func isRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, os.ErrNotExist)
}

// otherChildren names a group below the parent other than contain's leaf.
func (d *Delegation) otherChildren() string {
	entries, _ := os.ReadDir(d.parent)
	for _, e := range entries {
		if e.IsDir() && filepath.Join(d.parent, e.Name()) != d.leaf {
			return e.Name()
		}
	}
	return ""
}

// Limits are what a run asks the kernel to hold; zero fields ask nothing.
type Limits struct {
	Memory uint64  // memory.max, with memory.swap.max 0 and memory.oom.group 1
	Pids   int     // pids.max
	CPUs   float64 // cpu.max
}

// CPUPeriod is cpu.max's period: 100 ms, the kernel's default.
const CPUPeriod = 100000

// SetLimits writes the limits whose controller is enabled in g. It
// returns, by controller, what it set ("cgroup memory.max") and why one
// could not be set.
func (g *Group) SetLimits(l Limits) (set, why map[string]string) {
	set, why = map[string]string{}, map[string]string{}
	write := func(c string, files ...[2]string) {
		for _, f := range files {
			if err := writeFile(filepath.Join(g.Dir, f[0]), f[1]); err != nil {
				// memory.swap.max is missing without swap accounting:
				// with no swap to use, memory.max holds alone.
				if f[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist) {
					continue
				}
				why[c] = fmt.Sprintf("cannot write %s: %v", filepath.Join(g.Dir, f[0]), err)
				return
			}
		}
		set[c] = "cgroup " + files[0][0]
	}
	if l.Memory > 0 {
		write(MemoryController, [2]string{"memory.max", strconv.FormatUint(l.Memory, 10)},
			[2]string{"memory.swap.max", "0"}, [2]string{"memory.oom.group", "1"})
	}
	if l.Pids > 0 {
		write(PidsController, [2]string{"pids.max", strconv.Itoa(l.Pids)})
	}
	if l.CPUs > 0 {
		quota := max(int64(l.CPUs*CPUPeriod), 1000)
		write(CPUController, [2]string{"cpu.max", fmt.Sprintf("%d %d", quota, CPUPeriod)})
	}
	return set, why
}

// CPUUsage is the CPU time of everything that ever ran in the group
// (cpu.stat's usage_usec, there with or without the cpu controller).
func (g *Group) CPUUsage() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	n, ok := keyed(b, "usage_usec")
	if !ok {
		return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", g.Dir)
	}
	return time.Duration(n) * time.Microsecond, nil
}

// Events are the counters of the group's limits that tell what the
// kernel did.
type Events struct {
	OOMKills      uint64 // memory.events oom_kill: processes of the group the OOM killer ended, for any limit
	OwnLimit      uint64 // memory.events.local max + oom: the group's own memory.max was reached
	ForksRefused  uint64 // pids.events max
	Throttled     uint64 // cpu.stat nr_throttled
	MemoryPeak    uint64 // memory.peak (0: not there)
	PidsPeak      uint64 // pids.peak (0: not there)
	ThrottledTime time.Duration
}

// Events reads the group's limit counters; a missing file counts zero.
func (g *Group) Events() Events {
	read := func(name string) []byte {
		b, _ := os.ReadFile(filepath.Join(g.Dir, name))
		return b
	}
	var e Events
	e.OOMKills, _ = keyed(read("memory.events"), "oom_kill")
	local := read("memory.events.local")
	max, _ := keyed(local, "max")
	oom, _ := keyed(local, "oom")
	e.OwnLimit = max + oom
	e.ForksRefused, _ = keyed(read("pids.events"), "max")
	cpu := read("cpu.stat")
	e.Throttled, _ = keyed(cpu, "nr_throttled")
	us, _ := keyed(cpu, "throttled_usec")
	e.ThrottledTime = time.Duration(us) * time.Microsecond
	e.MemoryPeak, _ = parseNumber(read("memory.peak"))
	e.PidsPeak, _ = parseNumber(read("pids.peak"))
	return e
}

// ForksRefused reads pids.events' max alone: the forks the kernel has
// refused for pids.max so far.
func (g *Group) ForksRefused() uint64 {
	b, _ := os.ReadFile(filepath.Join(g.Dir, "pids.events"))
	n, _ := keyed(b, "max")
	return n
}

// Freeze freezes (true) or thaws the group (cgroup.freeze).
func (g *Group) Freeze(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return writeFile(filepath.Join(g.Dir, "cgroup.freeze"), v)
}

// Frozen reports whether every process in the group is frozen now
// (cgroup.events "frozen 1"): after Freeze(true), none forks any more.
func (g *Group) Frozen() bool {
	frozen, err := g.eventSays("frozen 1")
	return err == nil && frozen
}

// keyed reads "key N" from a flat-keyed file.
func keyed(b []byte, key string) (uint64, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// fieldsOf reads a file of space-separated words.
func fieldsOf(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// readPIDs reads a cgroup.procs file.
func readPIDs(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// writeFile writes s to a cgroup file, as one write, and removeDir
// removes a cgroup; a test's fake kernel replaces them.
var (
	writeFile = writeCgroupFile
	removeDir = unix.Rmdir
)

// writeCgroupFile opens path without O_CREAT and not through a link
// (O_NOFOLLOW: cgroupfs has no links, so one would be something else's).
func writeCgroupFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
