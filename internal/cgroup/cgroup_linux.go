package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/report"
	"golang.org/x/sys/unix"
)

// Group is the cgroup v2 child group contain makes for one run. COMMAND is
// cloned straight into it (CLONE_INTO_CGROUP), so it and everything it forks
// is inside from birth, setsid or not; cgroup.kill ends all of it at once.
type Group struct {
	Dir string // absolute directory
	rel string // its path as /proc/PID/cgroup shows it
	FD  int    // O_DIRECTORY, for SysProcAttr.CgroupFD
}

// Mount finds where the unified hierarchy is mounted and which part
// of it the mount shows (its root), from /proc/self/mountinfo. On hybrid
// layouts it is /sys/fs/cgroup/unified, so it is never assumed.
func Mount() (mountPoint, root string, err error) {
	b, err := proc.ReadFile("/proc/self/mountinfo", make([]byte, 0, 8192))
	if err != nil {
		return "", "", err
	}
	return parseMountinfo(b)
}

// parseMountinfo finds the first cgroup2 mount in mountinfo text.
func parseMountinfo(b []byte) (mountPoint, root string, err error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		// 41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
		pre, post, ok := bytes.Cut(line, []byte(" - "))
		if !ok || !bytes.HasPrefix(post, []byte("cgroup2 ")) {
			continue
		}
		f := strings.Fields(string(pre))
		if len(f) < 5 {
			continue
		}
		return procfs.UnescapeMount(f[4]), procfs.UnescapeMount(f[3]), nil
	}
	return "", "", errors.New("no cgroup2 file system mounted")
}

// cgroupOf reads the unified-hierarchy ("0::") line of /proc/PID/cgroup.
func cgroupOf(pid string) (string, error) {
	b, err := proc.ReadFile("/proc/"+pid+"/cgroup", make([]byte, 0, 512))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("/proc/%s/cgroup has no cgroup v2 (0::) line", pid)
}

// New makes contain-PID beside contain's own cgroup members. Any error
// means: fall back to the other layers.
func New(pid int) (*Group, error) {
	p, err := NewPlan(pid)
	if err != nil {
		return nil, err
	}
	return p.Make()
}

// Plan is where New makes its group, found before it is made: finding it
// reads /proc and the mounts, which contain run does while its crash
// guard starts, and makes the group only once the guard knows of it.
type Plan struct{ parent, own, name string }

// NewPlan finds where New(pid) makes its group.
func NewPlan(pid int) (*Plan, error) {
	parent, own, err := ownCgroupDir()
	if err != nil {
		return nil, err
	}
	return &Plan{parent: parent, own: own, name: RunName(pid)}, nil
}

// Make makes the group.
func (p *Plan) Make() (*Group, error) { return makeCgroup(p.parent, p.own, p.name) }

// MoveToOwn moves pid into the caller's own cgroup (contain's, or the
// leaf it moved into for the limits): out of a run's group, into the one
// contain itself was started in. It returns that group's directory.
func MoveToOwn(pid int) (string, error) {
	dir, _, err := ownCgroupDir()
	if err != nil {
		return "", err
	}
	return dir, writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// RunDir is where contain PID, a process in the same cgroup as the
// caller, made its group, if it made one.
func RunDir(pid int) (string, error) {
	parent, _, err := ownCgroupDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, RunName(pid)), nil
}

// RunName is the name of the group of contain run PID, a process of this
// PID namespace: contain-PID in the host's namespace, contain-PID-nsINODE
// in another, so that two runs of the same PID in two containers never
// meet in a hierarchy they share.
func RunName(pid int) string {
	name := Prefix + strconv.Itoa(pid)
	if ns := proc.NSName(); ns != "" {
		name += "-" + ns
	}
	return name
}

// OwnDir is the directory of the caller's own cgroup, in which New
// makes its group.
func OwnDir() (string, error) {
	dir, _, err := ownCgroupDir()
	return dir, err
}

// ownCgroupDir finds the directory of the caller's cgroup (DirOf), and its
// path as /proc/self/cgroup names it.
func ownCgroupDir() (dir, own string, err error) {
	own, err = cgroupOf("self")
	if err != nil {
		return "", "", err
	}
	dir, err = DirOf(own)
	return dir, own, err
}

// top is where the cgroup2 hierarchy is mounted: the usual place, else
// what mountinfo says.
func top() (string, error) {
	if mnt := UsualMount(); mnt != "" {
		return mnt, nil
	}
	mnt, _, err := Mount()
	return mnt, err
}

// UsualMount returns /sys/fs/cgroup (unified layout) or
// /sys/fs/cgroup/unified (hybrid) when that is a cgroup2 mount, else "".
func UsualMount() string {
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return p
		}
	}
	return ""
}

// makeCgroup creates parent/name and opens it for CLONE_INTO_CGROUP. A
// name that exists already (EEXIST: a group someone made before, or
// anything else there) is never taken over: contain uses only a group it
// made, opened not through a link. A group of contain's name is a dead
// run's, whose contain had this PID before (PIDs come round again within
// seconds where processes start fast); empty, it holds nothing, and it
// goes (rmdir removes only an empty group), so that this run makes its
// own. One that holds processes is an error: contain reap's to clear.
func makeCgroup(parent, own, name string) (*Group, error) {
	dir := filepath.Join(parent, name)
	err := unix.Mkdir(dir, 0o755)
	if errors.Is(err, unix.EEXIST) && unix.Rmdir(dir) == nil {
		err = unix.Mkdir(dir, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot create cgroup %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		unix.Rmdir(dir)
		return nil, fmt.Errorf("cannot open cgroup %s: %w", dir, err)
	}
	return &Group{Dir: dir, rel: filepath.Join(own, name), FD: fd}, nil
}

// DirOf is the directory of the group that /proc/PID/cgroup names rel.
// Reading mountinfo costs more than all the rest of contain run's set-up:
// first the two usual mounts are tried, which a statfs and a stat confirm
// in microseconds. They may show only a subtree of the hierarchy (a
// container without a cgroup namespace): then the group is not found
// there, and mountinfo says which subtree it is.
func DirOf(rel string) (string, error) {
	if mnt := UsualMount(); mnt != "" {
		var st unix.Stat_t
		if unix.Stat(mnt+rel, &st) == nil {
			return mnt + rel, nil
		}
	}
	mnt, root, err := Mount()
	if err != nil {
		return "", err
	}
	inMount := rel
	if root != "/" {
		rest, ok := strings.CutPrefix(rel, root)
		if !ok {
			return "", fmt.Errorf("cgroup %s is outside the cgroup2 mount at %s", rel, mnt)
		}
		inMount = rest
	}
	return mnt + inMount, nil
}

// Of is pid's cgroup, as /proc/PID/cgroup names it.
func Of(pid int) (string, error) { return cgroupOf(strconv.Itoa(pid)) }

// Populated reports whether any live process is in the group or below it;
// zombies do not count.
func (c *Group) Populated() (bool, error) { return c.eventSays("populated 1") }

// eventSays reports whether the group's cgroup.events holds the line
// want ("populated 1", "frozen 1").
func (c *Group) eventSays(want string) (bool, error) {
	b, err := proc.ReadFile(c.Dir+"/cgroup.events", make([]byte, 0, 64))
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte(want)), nil
}

// Procs lists the PIDs in the group and in any group below it (a nested
// contain run as root makes its own).
func (c *Group) Procs() ([]int, error) {
	var pids []int
	err := filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if path != c.Dir && errors.Is(err, os.ErrNotExist) {
				return nil // a nested group went away while walking
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		in, err := readPIDs(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			if path != c.Dir && errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		pids = append(pids, in...)
		return nil
	})
	return pids, err
}

// Contains reports whether pid is in the group or below it now.
func (c *Group) Contains(pid int) error {
	p, err := cgroupOf(strconv.Itoa(pid))
	if err != nil {
		return err
	}
	if p == c.rel || strings.HasPrefix(p, c.rel+"/") {
		return nil
	}
	return proc.ErrIdentity
}

// Kill ends every process in the group at once (cgroup.kill, Linux 5.14+).
// Older kernels lack the file: then each member is killed through a pidfd.
func (c *Group) Kill() error {
	err := writeCgroupFile(filepath.Join(c.Dir, "cgroup.kill"), "1")
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	pids, err := c.Procs()
	for _, pid := range pids {
		proc.SignalPinned(pid, unix.SIGKILL, func() error { return c.Contains(pid) })
	}
	return err
}

// EmptyWait bounds how long remove waits for a group's processes to
// finish exiting.
const EmptyWait = 2 * time.Second

// Remove deletes the group and any below it. The kernel refuses (EBUSY)
// while a process is in one, and a process killed a moment ago (by
// cgroup.kill, or after a crash) may still be exiting: remove then waits,
// up to cgroupEmptyWait, until cgroup.events says "populated 0", and tries
// again.
func (c *Group) Remove() error {
	deadline := time.Now().Add(EmptyWait)
	for {
		err := c.TryRemove()
		if err == nil || !errors.Is(err, unix.EBUSY) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (still in use after %v)", err, EmptyWait)
		}
		c.WaitEmpty(deadline)
	}
}

// WaitEmpty waits until no live process is in the group or below it, or
// the deadline passes.
func (c *Group) WaitEmpty(deadline time.Time) {
	b := proc.NewBackoff()
	for {
		pop, err := c.Populated()
		if err != nil || !pop {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(b.Next(), left))
	}
}

// TryRemove deletes the group and any below it, if they are empty now. A
// systemd scope contain asked for (contain-PID.scope) is systemd's to
// remove: only the groups below it go, and systemd stops the scope, and
// removes it, once it is empty.
func (c *Group) TryRemove() error {
	if c.FD >= 0 {
		unix.Close(c.FD)
		c.FD = -1
	}
	scope := IsScope(c.Dir)
	if !scope && unix.Rmdir(c.Dir) == nil {
		return nil
	}
	// Groups below it (a nested contain run as root) go first.
	var dirs []string
	filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if scope && len(dirs) > 0 {
		dirs = dirs[1:] // not the scope's own
	}
	var first error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && err != unix.ENOENT && first == nil {
			first = fmt.Errorf("cannot remove cgroup %s: %w", dirs[i], err)
		}
	}
	return first
}

// MountOf finds the cgroup2 mount that holds dir, and the part of
// the hierarchy it shows.
func MountOf(dir string) (mountPoint, root string) {
	if mnt, root, err := Mount(); err == nil && strings.HasPrefix(dir, mnt) {
		return mnt, root
	}
	return UsualMount(), "/"
}

// Stats is what a cgroup's accounting files say of everything that
// ever ran in it; a field is nil when its file is missing (its controller
// is not enabled there).
type Stats struct {
	user, system   *time.Duration // cpu.stat
	memPeak        *uint64        // memory.peak
	pidsPeak       *int           // pids.peak
	rbytes, wbytes *uint64        // io.stat, all devices
}

// Stats reads the group's accounting files.
func (c *Group) Stats() Stats {
	var s Stats
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(c.Dir, name))
		if err != nil {
			return nil
		}
		return b
	}
	if b := read("cpu.stat"); b != nil {
		s.user, s.system = parseCPUStat(b)
	}
	if n, ok := parseNumber(read("memory.peak")); ok {
		s.memPeak = &n
	}
	if n, ok := parseNumber(read("pids.peak")); ok {
		v := int(n)
		s.pidsPeak = &v
	}
	if b := read("io.stat"); b != nil {
		s.rbytes, s.wbytes = parseIOStat(b)
	}
	return s
}

// parseCPUStat reads user_usec and system_usec of cpu.stat.
func parseCPUStat(b []byte) (user, system *time.Duration) {
	usec := func(key string) *time.Duration {
		n, ok := keyed(b, key)
		if !ok {
			return nil
		}
		d := time.Duration(n) * time.Microsecond
		return &d
	}
	return usec("user_usec"), usec("system_usec")
}

// parseNumber reads a file that holds one number.
func parseNumber(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && len(b) > 0
}

// parseIOStat sums rbytes and wbytes over the devices of io.stat. An empty
// file (no I/O yet) is zero, not unknown.
func parseIOStat(b []byte) (r, w *uint64) {
	var rs, ws uint64
	for _, line := range strings.Split(string(b), "\n") {
		for _, kv := range strings.Fields(line)[min(1, len(strings.Fields(line))):] {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if !ok || err != nil {
				continue
			}
			switch k {
			case "rbytes":
				rs += n
			case "wbytes":
				ws += n
			}
		}
	}
	return &rs, &ws
}

// Fill puts the cgroup's figures into res, each with its source.
func (st Stats) Fill(res *report.Resources) {
	const src = "cgroup "
	if res.Sources == nil {
		res.Sources = map[string]string{}
	}
	if st.user != nil && st.system != nil {
		res.CPUUserSeconds, res.CPUSystemSeconds = report.Seconds(*st.user), report.Seconds(*st.system)
		res.Sources["cpu"] = src + "cpu.stat"
	}
	if st.memPeak != nil {
		res.PeakMemoryBytes = st.memPeak
		res.Sources["peak_memory_bytes"] = src + "memory.peak"
	}
	if st.pidsPeak != nil {
		res.PeakProcesses = st.pidsPeak
		res.Sources["peak_processes"] = src + "pids.peak"
	}
	if st.rbytes != nil {
		res.IOReadBytes, res.IOWriteBytes = st.rbytes, st.wbytes
		res.Sources["io"] = src + "io.stat"
	}
}
