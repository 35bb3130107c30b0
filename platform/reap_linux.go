package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/procfs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// Reap kills what plan names, safely and completely:
//
//  1. every process is pinned by a pidfd, then its start time and tag are
//     read again; one whose identity changed is left alone;
//  2. the session is stopped: leftover cgroups frozen, every process sent
//     SIGSTOP; a rescan finds what was forked meanwhile, until nothing new
//     appears (the kernel aborts a fork when a stop is pending, so a child
//     either exists before the stop, and the rescan finds it, or not at all);
//  3. the first signal and SIGCONT go to everything, the cgroups are thawed;
//  4. after the grace period, SIGKILL (cgroup.kill) to what is left;
//  5. one more rescan: anything new is killed too.
//
// Every signal goes through the pidfd: a PID reused meanwhile is never hit.
func Reap(plan ReapPlan) ReapReport {
	e := &reaper{plan: plan, log: plan.Log, seen: map[identity]bool{}, buf: make([]byte, 0, 8192)}
	if e.log == nil {
		e.log = nopLog
	}
	defer e.closeAll()
	for _, lc := range plan.Cgroups {
		e.freeze(lc)
	}
	e.addChoices(plan.Targets)
	e.addCgroupMembers()
	e.addGroupMembers()
	for round := 0; round < 1000 && e.rescan(); round++ {
	}
	for _, t := range e.targets {
		e.send(t, plan.Signal)
		e.send(t, unix.SIGCONT)
	}
	for _, c := range e.cgroups {
		c.thaw()
	}
	e.waitExit(time.Now().Add(plan.Grace))
	// SIGKILL until nothing is left and a rescan finds nothing new.
	for round := 0; round < 100; round++ {
		e.killAll()
		e.waitExit(time.Now().Add(time.Second))
		if !e.rescan() {
			break
		}
	}
	return e.report()
}

// errGone: the process ended while it was being checked.
var errGone = errors.New("process ended")

type identity struct {
	pid   int
	start uint64
}

type reaper struct {
	plan    ReapPlan
	log     Logger
	targets []*target
	seen    map[identity]bool
	cgroups []*frozenCgroup
	buf     []byte
}

// target is one process being reaped.
type target struct {
	out    Outcome
	fd     int           // pidfd; -1 once done with
	cg     *frozenCgroup // the leftover cgroup it was found in, if any
	termed bool
	killed bool
	done   bool // ended, or left alone
}

type frozenCgroup struct {
	*cgroup
	frozen bool
	out    CgroupOutcome
}

// pin opens a pidfd for p and checks, through fresh reads after the pidfd
// exists, that the PID still names the process seen: same start time, not a
// zombie, and (verifyTag) the same tag. The pidfd then keeps the PID from
// being reused for anything else.
func (e *reaper) pin(p session.Process, value string, verify func(procfs.Stat) error) *target {
	t := &target{out: Outcome{Process: p, Session: value}, fd: -1}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			t.finish("was already gone", false)
		} else {
			t.finish(fmt.Sprintf("cannot be pinned: %v", err), true)
		}
		return t
	}
	st, err := readStat(p.PID, e.buf)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.finish("was already gone", false)
	case err != nil:
		t.finish(fmt.Sprintf("cannot be checked: %v", err), true)
	case st.Start != p.Start:
		t.finish(fmt.Sprintf("left alone: PID %d now names another process (started later)", p.PID), false)
	case st.Zombie():
		t.finish("was already gone", false)
	default:
		switch err := verify(st); {
		case errors.Is(err, errGone):
			t.finish("was already gone", false)
		case err != nil:
			t.finish("left alone: "+err.Error(), false)
		}
	}
	if t.done {
		unix.Close(fd)
		return t
	}
	t.fd = fd
	return t
}

func (t *target) finish(result string, alive bool) {
	t.out.Result, t.out.Alive, t.done = result, alive, true
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
}

// verifyTag checks that p still carries value.
func (e *reaper) verifyTag(pid int, value string) func(procfs.Stat) error {
	return func(procfs.Stat) error {
		env, err := proc.Environ(pid, e.buf)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return errGone // exited (a zombie has no environment) since the stat
		}
		if err != nil {
			return fmt.Errorf("its environment cannot be read again: %v", err)
		}
		e.buf = env[:0]
		got, ok := procfs.Getenv(env, tag.Var)
		if !ok {
			return fmt.Errorf("it no longer carries %s", tag.Var)
		}
		if got != value {
			return fmt.Errorf("its tag changed to %q", got)
		}
		return nil
	}
}

// add pins a process not seen before and stops it.
func (e *reaper) add(t *target) {
	e.targets = append(e.targets, t)
	if t.done {
		return
	}
	if t.cg == nil || !t.cg.frozen {
		e.send(t, unix.SIGSTOP)
	}
}

func (e *reaper) addChoices(choices []session.Choice) (added bool) {
	for _, c := range choices {
		id := identity{c.PID, c.Start}
		if c.Skip != "" || e.seen[id] {
			continue
		}
		e.seen[id] = true
		t := e.pin(c.Process, c.Session, e.verifyTag(c.PID, c.Session))
		t.cg = e.cgroupHolding(c.PID)
		e.add(t)
		added = true
	}
	return added
}

// addCgroupMembers adds the processes of the leftover cgroups, tagged or
// not: a process that cleared its environment is still inside.
func (e *reaper) addCgroupMembers() (added bool) {
	for _, c := range e.cgroups {
		pids, err := c.procs()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log("cannot list cgroup %s: %v", c.dir, err)
		}
		for _, pid := range pids {
			st, err := readStat(pid, e.buf)
			if err != nil || st.Zombie() {
				continue
			}
			id := identity{pid, st.Start}
			if e.seen[id] {
				continue
			}
			e.seen[id] = true
			p := describe(st)
			t := e.pin(p, "cgroup "+c.dir, func(procfs.Stat) error {
				if c.contains(pid) != nil {
					return errors.New("it left the cgroup")
				}
				return nil
			})
			t.cg = c
			e.add(t)
			added = true
		}
	}
	return added
}

// addGroupMembers adds the members of the plan's process group, tagged or
// not, that started no earlier than the group's leader did.
func (e *reaper) addGroupMembers() (added bool) {
	pgrp, since := e.plan.ProcessGroup, e.plan.ProcessGroupSince
	if pgrp <= 1 {
		return false
	}
	procs, err := scanProcs()
	if err != nil {
		e.log("cannot scan /proc: %v", err)
		return false
	}
	me := os.Getpid()
	for pid, st := range procs {
		id := identity{pid, st.Start}
		if st.PGRP != pgrp || st.Start < since || st.Zombie() || pid == me || e.seen[id] {
			continue
		}
		e.seen[id] = true
		t := e.pin(describe(st), "process group "+strconv.Itoa(pgrp), func(now procfs.Stat) error {
			if now.PGRP != pgrp {
				return errors.New("it left the process group")
			}
			return nil
		})
		t.cg = e.cgroupHolding(pid)
		e.add(t)
		added = true
	}
	return added
}

// describe fills in what ps shows of a process found without its tag.
func describe(st procfs.Stat) session.Process {
	t := procfs.Tagged{Stat: st}
	var uidErr, bootErr error
	t.UID, uidErr = proc.UID(st.PID, nil)
	t.Argv, _ = proc.Cmdline(st.PID, nil)
	boot, bootErr := bootTime(proc)
	p := processOf(t, boot)
	if uidErr != nil {
		p.User = "" // unknown, not root
	}
	if bootErr != nil {
		p.Started = time.Time{}
	}
	return p
}

// cgroupHolding returns the leftover cgroup pid is in, if any.
func (e *reaper) cgroupHolding(pid int) *frozenCgroup {
	for _, c := range e.cgroups {
		if c.contains(pid) == nil {
			return c
		}
	}
	return nil
}

// rescan looks for processes of the chosen sessions and cgroups not seen
// yet, pins and stops them, and reports whether it found any.
func (e *reaper) rescan() bool {
	added := e.addCgroupMembers()
	added = e.addGroupMembers() || added
	if e.plan.Rescan == nil {
		return added
	}
	choices, err := e.plan.Rescan()
	if err != nil {
		e.log("cannot rescan: %v", err)
		return added
	}
	return e.addChoices(choices) || added
}

// send signals t through its pidfd.
func (e *reaper) send(t *target, sig syscall.Signal) {
	if t.done {
		return
	}
	err := unix.PidfdSendSignal(t.fd, sig, nil, 0)
	switch {
	case err == nil:
		e.log("sent %s to %d (%s)", SignalName(sig), t.out.PID, t.out.Comm)
	case errors.Is(err, unix.ESRCH):
		t.finish(t.endedAfter(), false)
	default:
		t.finish(fmt.Sprintf("cannot send %s: %v", SignalName(sig), err), true)
	}
	if sig != unix.SIGSTOP && sig != unix.SIGCONT {
		t.termed = true
	}
}

// endedAfter says what ended t, from the signals it was sent.
func (t *target) endedAfter() string {
	switch {
	case t.killed:
		return "killed with SIGKILL"
	case t.termed:
		return "ended after the first signal"
	}
	return "was already gone"
}

// killAll sends SIGKILL to every cgroup (cgroup.kill) and every process
// still alive.
func (e *reaper) killAll() {
	for _, c := range e.cgroups {
		if err := c.kill(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log("cannot kill cgroup %s: %v", c.dir, err)
		}
	}
	e.pollExited()
	for _, t := range e.targets {
		if !t.done {
			t.killed = true
			e.send(t, unix.SIGKILL)
		}
	}
}

// pollExited marks the targets whose pidfd says they have exited.
func (e *reaper) pollExited() (alive int) {
	var fds []unix.PollFd
	var ts []*target
	for _, t := range e.targets {
		if !t.done {
			fds = append(fds, unix.PollFd{Fd: int32(t.fd), Events: unix.POLLIN})
			ts = append(ts, t)
		}
	}
	if len(fds) == 0 {
		return 0
	}
	for {
		_, err := unix.Poll(fds, 0)
		if err != unix.EINTR {
			break
		}
	}
	for i, fd := range fds {
		if fd.Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
			ts[i].finish(ts[i].endedAfter(), false)
		} else {
			alive++
		}
	}
	return alive
}

// waitExit waits until every target has exited or the deadline passes.
func (e *reaper) waitExit(deadline time.Time) {
	b := newBackoff()
	for e.pollExited() > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(b.next(), left))
	}
}

// freeze adds a leftover cgroup and freezes it, waiting briefly until the
// kernel says it is frozen.
func (e *reaper) freeze(lc LeftoverCgroup) {
	c := &frozenCgroup{cgroup: &cgroup{dir: lc.Dir, rel: cgroupRel(lc.Dir), fd: -1}, out: CgroupOutcome{Dir: lc.Dir}}
	e.cgroups = append(e.cgroups, c)
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.freeze"), []byte("1"), 0); err != nil {
		e.log("cannot freeze cgroup %s: %v (stopping its processes instead)", c.dir, err)
		return
	}
	b := newBackoff()
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		ev, err := readFile(filepath.Join(c.dir, "cgroup.events"), e.buf)
		if err == nil && strings.Contains(string(ev), "frozen 1") {
			c.frozen = true
			e.log("froze cgroup %s", c.dir)
			return
		}
		time.Sleep(b.next())
	}
	e.log("cgroup %s is not frozen yet (stopping its processes too)", c.dir)
}

func (c *frozenCgroup) thaw() {
	os.WriteFile(filepath.Join(c.dir, "cgroup.freeze"), []byte("0"), 0)
}

// cgroupRel is dir as /proc/PID/cgroup shows it.
func cgroupRel(dir string) string {
	mnt, root := cgroupMountOf(dir)
	rel := strings.TrimPrefix(dir, mnt)
	if root != "/" {
		rel = root + rel
	}
	if rel == "" {
		rel = "/"
	}
	return rel
}

// report closes the books: the cgroups are removed, and every target says
// what became of it.
func (e *reaper) report() ReapReport {
	var r ReapReport
	e.pollExited()
	for _, t := range e.targets {
		if !t.done {
			t.finish("still alive after SIGKILL (in uninterruptible sleep, or traced)", true)
		}
		r.Processes = append(r.Processes, t.out)
	}
	for _, c := range e.cgroups {
		c.thaw()
		c.out.Result = "killed and removed"
		if err := c.remove(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.out.Result, c.out.Failed = err.Error(), true
		}
		r.Cgroups = append(r.Cgroups, c.out)
	}
	return r
}

func (e *reaper) closeAll() {
	for _, t := range e.targets {
		if t.fd >= 0 {
			unix.Close(t.fd)
			t.fd = -1
		}
	}
}

// FindLeftoverCgroups walks the cgroup2 hierarchy for groups contain-PID
// whose contain run is gone (the PID does not exist, is a zombie, or
// started after the group's earliest process). Groups of running contains
// are not returned; groups this user cannot write are, marked skipped.
func FindLeftoverCgroups() ([]LeftoverCgroup, error) {
	mnt := usualCgroup2Mount()
	if mnt == "" {
		var err error
		if mnt, _, err = cgroup2Mount(); err != nil {
			return nil, nil // no cgroup v2: contain never made one
		}
	}
	var out []LeftoverCgroup
	err := filepath.WalkDir(mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: nothing of ours can be there
		}
		if !d.IsDir() {
			return nil
		}
		pid, ok := containCgroupPID(d.Name())
		if !ok {
			return nil
		}
		lc, leftover := inspectCgroup(path, pid)
		if !leftover {
			return nil // a running contain's: a dead nested one may be below
		}
		out = append(out, lc)
		return fs.SkipDir // what is below goes with it
	})
	return out, err
}

// containCgroupPID parses the name contain gives its cgroups.
func containCgroupPID(name string) (int, bool) {
	n, ok := strings.CutPrefix(name, cgroupPrefix)
	if !ok || n == "" || n[0] == '0' {
		return 0, false
	}
	pid, err := strconv.Atoi(n)
	return pid, err == nil && pid > 0 && pid <= tag.MaxPID
}

// inspectCgroup decides whether contain PID's group at dir is left over.
func inspectCgroup(dir string, pid int) (LeftoverCgroup, bool) {
	c := &cgroup{dir: dir, fd: -1}
	procs, _ := c.procs()
	lc := LeftoverCgroup{Dir: dir, Procs: procs}
	var earliest uint64
	found := false
	for _, p := range procs {
		if st, err := readStat(p, nil); err == nil && (!found || st.Start < earliest) {
			earliest, found = st.Start, true
		}
	}
	o, err := LookupOriginator(pid)
	switch {
	case err != nil:
		return lc, false // cannot tell: never reap
	case o.Exists && !o.Zombie && (!found || o.Start <= earliest):
		return lc, false // its contain runs (an empty group may be starting up)
	}
	if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil {
		lc.Skip = "not writable by this user"
	}
	return lc, true
}
