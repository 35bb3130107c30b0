package run

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/report"
)

// cgroupGroup is a run's cgroup as its group.
type cgroupGroup struct {
	cg      *cgroup.Group
	log     Logger
	collect bool          // the report or -v wants its accounting
	stats   *cgroup.Stats // read last before it was removed, when collecting
	gone    bool          // removed
	// early: the reaper removed it as COMMAND ended (removeEmptyGroup),
	// while the main loop may still act on it: nothing is left to list,
	// kill or freeze.
	early atomic.Bool
	// delegation is what contain changed in its parent cgroup to enable
	// the limits' controllers: undone once the group is gone.
	delegation *cgroup.Delegation
}

// removed: the close removed the group, or the reaper did (early).
func (g *cgroupGroup) removed() bool { return g.gone || g.early.Load() }

func (g *cgroupGroup) name() string { return "cgroup " + g.cg.Dir }

func (g *cgroupGroup) procs() []int {
	if g.removed() {
		return nil
	}
	pids, err := g.cg.Procs()
	if err != nil {
		g.log("cannot list cgroup %s: %v", g.cg.Dir, err)
	}
	return pids
}

func (g *cgroupGroup) holds(pid int) error { return g.cg.Contains(pid) }

// release moves pid out of the run's cgroup into contain's own; a
// process that is not in the run's cgroup is never moved (contain moves
// only what it put there).
func (g *cgroupGroup) release(pid int) (string, error) {
	if g.removed() {
		return "", nil
	}
	if err := g.cg.Contains(pid); err != nil {
		return "", fmt.Errorf("%w (%v)", errNotInGroup, err)
	}
	return cgroup.MoveToOwn(pid)
}

func (g *cgroupGroup) kill() bool {
	if g.removed() {
		return false
	}
	if err := g.cg.Kill(); err != nil {
		g.log("cannot kill cgroup %s: %v", g.cg.Dir, err)
		return false
	}
	return true
}

func (g *cgroupGroup) populated() bool {
	if g.removed() {
		return false
	}
	pop, err := g.cg.Populated()
	if err != nil {
		g.log("cannot read %s/cgroup.events: %v", g.cg.Dir, err)
	}
	return pop || err != nil
}

// emptied removes the cgroup if it is empty now, the common case at the
// end: then nothing is left.
func (g *cgroupGroup) emptied() bool {
	if g.gone {
		return true
	}
	if g.collect {
		st := g.cg.Stats()
		g.stats = &st
	}
	if g.cg.TryRemove() != nil {
		return false
	}
	g.gone = true
	g.undo()
	return true
}

func (g *cgroupGroup) remove() {
	if g.gone {
		return
	}
	if g.collect {
		g.cg.WaitEmpty(time.Now().Add(cgroup.EmptyWait))
		st := g.cg.Stats()
		g.stats = &st
	}
	if err := g.cg.Remove(); err != nil {
		g.log("%v", err)
	}
	g.gone = true
	g.undo()
}

// undo puts back what enabling the limits' controllers changed.
func (g *cgroupGroup) undo() {
	if err := g.delegation.Undo(); err != nil {
		g.log("%v", err)
	}
	g.delegation = nil
}

func (g *cgroupGroup) resources(res *report.Resources) bool {
	if g.stats == nil {
		return false
	}
	g.stats.Fill(res)
	return true
}
