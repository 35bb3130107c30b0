package reap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// reaperOS is what reap keeps on Linux besides the portable state: the
// leftover cgroups it freezes, kills and removes, and a read buffer.
type reaperOS struct {
	cgroups []*frozenCgroup
	buf     []byte
}

type frozenCgroup struct {
	*cgroup.Group
	frozen bool
	held   bool // a process was found in it
	out    CgroupOutcome
}

// prepare freezes the leftover cgroups.
func (e *reaper) prepare() {
	e.buf = make([]byte, 0, 8192)
	for _, lc := range e.plan.Cgroups {
		e.freeze(lc)
	}
}

// addUntagged adds what the tag does not find: the members of leftover
// cgroups, and what the plan's tracker finds.
func (e *reaper) addUntagged() bool {
	added := e.addCgroupMembers()
	return e.addTracked() || added
}

// targetOS is what Linux checks of a target besides its start time: its
// tag, or that it is still in its cgroup or process group.
type targetOS struct {
	verify func(procfs.Stat) error
}

// newTarget is p, to be pinned and checked with verify.
func newTarget(p session.Process, value string, verify func(procfs.Stat) error) *target {
	return &target{out: Outcome{Process: p, Session: value}, targetOS: targetOS{verify: verify}}
}

// choiceTarget is a tagged process, whose tag is checked again.
func (e *reaper) choiceTarget(c session.Choice) *target {
	t := newTarget(c.Process, c.Session, e.verifyTag(c.PID, c.Session))
	if cg := e.cgroupHolding(c.PID); cg != nil {
		t.frozen = cg.frozen
	}
	return t
}

// openPin opens a pidfd for t. It keeps the PID from being reused for
// anything else; check then tells whether it is still the process seen.
func (e *reaper) openPin(t *target) (proc.Pin, error) {
	return proc.OpenPin(t.out.PID)
}

// check reads t again, once its pidfd exists: same start time, not a
// zombie, and what verify checks.
func (e *reaper) check(t *target, _ proc.Pin) error {
	st, err := proc.ReadStat(t.out.PID, e.buf)
	switch {
	case proc.Gone(err):
		return proc.ErrGone
	case err != nil:
		return &proc.PinFailure{What: "cannot be checked", Err: err}
	case st.Start != t.out.Start:
		return proc.ErrIdentity
	case st.Zombie():
		return proc.ErrGone
	}
	return t.verify(st)
}

// ended reports whether t, not pinned now, has exited: its PID is gone, a
// zombie, or another process's.
func (e *reaper) ended(t *target) bool {
	st, err := proc.ReadStat(t.out.PID, e.buf)
	return proc.Gone(err) || err == nil && (st.Start != t.out.Start || st.Zombie())
}

// stopWait is how long reap waits for a batch of processes sent SIGSTOP to
// stop. One that does not (in uninterruptible sleep) is checked again
// before each signal instead.
const stopWait = 200 * time.Millisecond

// waitStopped waits until each of ts is stopped (state T or t) or gone:
// SIGSTOP takes effect when the process next leaves the kernel, and an
// execve under way completes first.
func (e *reaper) waitStopped(ts []*target) {
	b := proc.NewBackoff()
	deadline := time.Now().Add(stopWait)
	for len(ts) > 0 {
		var running []*target
		for _, t := range ts {
			st, err := proc.ReadStat(t.out.PID, e.buf)
			if err == nil && st.Start == t.out.Start && !st.Zombie() && st.State != 'T' && st.State != 't' {
				running = append(running, t)
			}
		}
		ts = running
		if len(ts) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, t := range ts {
				t.unsure = true
				e.log("%d (%s) has not stopped yet: checked again before each signal", t.out.PID, t.out.Comm)
			}
			return
		}
		time.Sleep(b.Next())
	}
}

// pinHeadroom is how many file descriptors reap leaves for everything but
// pins: the scan's workers (one file each), the cgroup walks, the
// standard streams and the Go runtime's own.
const pinHeadroom = 32

// pinBudget is how many pidfds reap may hold at once: RLIMIT_NOFILE (Go
// raised the soft limit to the hard one at start) less what is open now
// and the headroom; at least one.
func pinBudget() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 16
	}
	limit := int(min(rl.Cur, 1<<20))
	open := 0
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(fds)
	}
	return max(limit-open-pinHeadroom, 1)
}

// verifyTag checks that p still carries value.
func (e *reaper) verifyTag(pid int, value string) func(procfs.Stat) error {
	return func(procfs.Stat) error {
		env, err := proc.FS.Environ(pid, e.buf)
		if proc.Gone(err) {
			return proc.ErrGone // exited (a zombie has no environment) since the stat
		}
		if err != nil {
			return fmt.Errorf("its environment cannot be read again: %v", err)
		}
		e.buf = env[:0]
		if len(env) == 0 {
			// Exiting (its memory is gone), or in the middle of an exec
			// (the new image's environment is not set up yet).
			if env, err = e.settledEnviron(pid); err != nil {
				return err
			}
		}
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

// addCgroupMembers adds the processes of the leftover cgroups, tagged or
// not: a process that cleared its environment is still inside.
func (e *reaper) addCgroupMembers() (added bool) {
	for _, c := range e.cgroups {
		pids, err := c.Procs()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log("cannot list cgroup %s: %v", c.Dir, err)
		}
		c.held = c.held || len(pids) > 0
		for _, pid := range pids {
			st, err := proc.ReadStat(pid, e.buf)
			if err != nil || st.Zombie() {
				continue
			}
			id := proc.ID{PID: pid, Start: st.Start}
			if e.seen[id] {
				continue
			}
			e.seen[id] = true
			t := newTarget(describe(st), "", func(procfs.Stat) error {
				if c.Contains(pid) != nil {
					return errors.New("it left the cgroup")
				}
				return nil
			})
			t.frozen = c.frozen
			t.out.Found, t.out.Cgroup = FoundInCgroup, c.Dir
			e.add(t)
			added = true
		}
	}
	return added
}

// addTracked adds what the plan's tracker finds, tagged or not: its
// PID and start time are the process's identity, checked again before
// each signal.
func (e *reaper) addTracked() (added bool) {
	if e.plan.Track == nil {
		return false
	}
	procs, err := proc.Scan()
	if err != nil {
		e.log("cannot scan /proc: %v", err)
		return false
	}
	live, _ := e.plan.Track.Update(procs)
	for _, p := range live {
		id := proc.ID{PID: p.PID, Start: p.Start}
		if e.seen[id] {
			continue
		}
		st, err := proc.ReadStat(p.PID, e.buf)
		if err != nil || st.Start != p.Start {
			continue // gone since the scan
		}
		e.seen[id] = true
		t := newTarget(describe(st), "", func(procfs.Stat) error { return nil })
		t.out.Found = FoundByTracker
		if cg := e.cgroupHolding(p.PID); cg != nil {
			t.frozen = cg.frozen
		}
		e.add(t)
		added = true
	}
	return added
}

// settledEnviron reads again the environment of pid, which read empty: an
// exiting process has released its memory before it becomes a zombie
// (errGone once it is one), and one in the middle of an exec has no
// environment until the new image is set up. Either settles within
// moments; a live process whose environment is really empty only costs the
// wait.
func (e *reaper) settledEnviron(pid int) ([]byte, error) {
	b := proc.NewBackoff()
	for deadline := time.Now().Add(100 * time.Millisecond); ; {
		st, err := proc.ReadStat(pid, e.buf)
		if proc.Gone(err) || err == nil && st.Zombie() {
			return nil, proc.ErrGone
		}
		env, err := proc.FS.Environ(pid, e.buf)
		switch {
		case proc.Gone(err):
			return nil, proc.ErrGone
		case err != nil:
			return nil, fmt.Errorf("its environment cannot be read again: %v", err)
		case len(env) > 0 || time.Now().After(deadline):
			return env, nil
		}
		time.Sleep(b.Next())
	}
}

// describe fills in what ps shows of a process found without its tag.
func describe(st procfs.Stat) session.Process {
	t := procfs.Tagged{Stat: st}
	var uidErr, bootErr error
	t.UID, uidErr = proc.FS.UID(st.PID, nil)
	t.Argv, _ = proc.FS.Cmdline(st.PID, nil)
	boot, bootErr := proc.BootTime(proc.FS)
	p := proc.ProcessOf(t, boot)
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
		if c.Contains(pid) == nil {
			return c
		}
	}
	return nil
}

// freeze adds a leftover cgroup and freezes it, waiting briefly until the
// kernel says it is frozen.
func (e *reaper) freeze(lc cgroup.Leftover) {
	c := &frozenCgroup{Group: cgroup.At(lc.Dir), out: CgroupOutcome{Dir: lc.Dir}}
	e.cgroups = append(e.cgroups, c)
	if err := c.Freeze(true); err != nil {
		e.log("cannot freeze cgroup %s: %v (stopping its processes instead)", c.Dir, err)
		return
	}
	b := proc.NewBackoff()
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		ev, err := proc.ReadFile(filepath.Join(c.Dir, "cgroup.events"), e.buf)
		if err == nil && strings.Contains(string(ev), "frozen 1") {
			c.frozen = true
			e.log("froze cgroup %s", c.Dir)
			return
		}
		time.Sleep(b.Next())
	}
	e.log("cgroup %s is not frozen yet (stopping its processes too)", c.Dir)
}

// resumeGroups thaws the leftover cgroups.
func (e *reaper) resumeGroups() {
	for _, c := range e.cgroups {
		c.thaw()
	}
}

// killGroups kills every leftover cgroup (cgroup.kill).
func (e *reaper) killGroups() {
	for _, c := range e.cgroups {
		if err := c.Kill(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log("cannot kill cgroup %s: %v", c.Dir, err)
		}
	}
}

func (c *frozenCgroup) thaw() {
	c.Freeze(false)
}

// removeGroups thaws and removes the leftover cgroups.
func (e *reaper) removeGroups() []CgroupOutcome {
	var out []CgroupOutcome
	for _, c := range e.cgroups {
		c.thaw()
		if e.plan.Accounted != nil {
			// Everything in it has ended: what it accounted is final.
			c.WaitEmpty(time.Now().Add(cgroup.EmptyWait))
			c.Stats().Fill(e.plan.Accounted)
		}
		c.out.Result = "killed and removed"
		if !c.held {
			c.out.Result = "removed (it was empty)"
		}
		if cgroup.IsScope(c.Dir) {
			// Its directory is systemd's, which stops an empty scope.
			c.out.Result = "killed; systemd stops the emptied scope"
			if !c.held {
				c.out.Result = "emptied; systemd stops the scope"
			}
		}
		if err := c.Remove(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.out.Result, c.out.Failed = err.Error(), true
		}
		out = append(out, c.out)
	}
	return out
}
