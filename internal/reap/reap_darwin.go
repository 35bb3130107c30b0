package reap

import (
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// reaperOS: macOS has no leftover groups to reap (no cgroups).
type reaperOS struct{}

func (e *reaper) prepare()                      {}
func (e *reaper) resumeGroups()                 {}
func (e *reaper) killGroups()                   {}
func (e *reaper) removeGroups() []CgroupOutcome { return nil }

// targetOS is what macOS checks of a target before each signal besides its
// PID and start time: its tag, or that it is still in its process group.
type targetOS struct {
	verify func(proc.MacProc) error
}

// choiceTarget is a tagged process, whose tag is checked again.
func (e *reaper) choiceTarget(c session.Choice) *target {
	return &target{out: Outcome{Process: c.Process, Session: c.Session}, targetOS: targetOS{verify: proc.Darwin.TagCheck(c.Session)}}
}

// addUntagged adds what the plan's tracker finds, tagged or not: its PID
// and start time are the process's identity, read again before each
// kill(2).
func (e *reaper) addUntagged() (added bool) {
	if e.plan.Track == nil {
		return false
	}
	procs, err := proc.Darwin.All()
	if err != nil {
		e.log("cannot list processes: %v", err)
		return false
	}
	byPID := make(map[int]proc.MacProc, len(procs))
	for _, p := range procs {
		byPID[p.PID] = p
	}
	live, _ := e.plan.Track.Update(proc.MacEntries(procs))
	for _, l := range live {
		id := proc.ID{PID: l.PID, Start: l.Start}
		if e.seen[id] {
			continue
		}
		e.seen[id] = true
		p := byPID[l.PID]
		q := session.Process{PID: p.PID, PPID: p.PPID, Start: p.Start, Started: time.UnixMicro(int64(p.Start)), UID: p.RUID, User: proc.Darwin.User(p.RUID), Comm: p.Comm}
		if a, _ := proc.Darwin.ReadArgs(p); a != nil {
			q.Argv = a.Argv
		}
		e.add(&target{out: Outcome{Process: q, Found: FoundByTracker}})
		added = true
	}
	return added
}

// openPin: macOS has no handle that holds a process; the pin reads it
// again before every signal.
func (e *reaper) openPin(t *target) (proc.Pin, error) {
	return proc.Darwin.Pin(t.out.PID, t.out.Start, t.verify), nil
}

// check reads t again: same start time, not a zombie, and its tag (or
// process group).
func (e *reaper) check(_ *target, p proc.Pin) error { return p.(*proc.MacPin).Check(true) }

// ended reports whether t has exited: its PID is free, a zombie's, or
// another process's.
func (e *reaper) ended(t *target) bool { return proc.Darwin.Ended(t.out.PID, t.out.Start) }

// waitStopped waits until each of ts shows as stopped (p_stat SSTOP) or
// gone; one that does not in time is checked again before each signal
// (as every process is on macOS anyway).
func (e *reaper) waitStopped(ts []*target) {
	pids := make([]int, len(ts))
	starts := make([]uint64, len(ts))
	byPID := make(map[int]*target, len(ts))
	for i, t := range ts {
		pids[i], starts[i] = t.out.PID, t.out.Start
		byPID[t.out.PID] = t
	}
	for _, pid := range proc.Darwin.WaitStopped(pids, starts) {
		t := byPID[pid]
		t.unsure = true
		e.log("%d (%s) has not stopped yet: checked again before each signal", pid, t.out.Comm)
	}
}

// pinBudget: a pin on macOS holds no descriptor.
func pinBudget() int { return 1 << 20 }
