package run

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/scope"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/report"
)

// controllerOf is the cgroup controller each kernel-held limit needs; CPU
// time needs none (cpu.stat is always there).
var controllerOf = map[limit.Kind]string{limit.Memory: cgroup.MemoryController, limit.Pids: cgroup.PidsController, limit.CPUs: cgroup.CPUController}

// controllersOf is the controllers kinds need.
func controllersOf(kinds []limit.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = controllerOf[k]
	}
	return out
}

// kernelLimits sets what the run's cgroup can hold of the limits: the
// controllers enabled in its parent (contain moving itself and its guard
// into a leaf of their own when the parent holds nothing else), then
// memory.max, pids.max and cpu.max. Where that cannot hold them all (the
// parent holds other processes, or contain may make no cgroup at all), it
// asks systemd for a scope to do the same in (intoScope). What neither
// holds stays sampled, and kernelWhy says why, in one line each.
func (sys *linuxOS) kernelLimits(w *limit.Watch) {
	defer func() {
		// Where the kernel holds memory, its log names what its OOM
		// killer ends (root): read from here on, at the end. Its PIDs
		// are the host's: in a container's PID namespace (a privileged
		// one, without a cgroup namespace, where the log's cgroup is
		// contain's) they would name other processes, so there the
		// victims are those contain reaped.
		if w.Kernel(limit.Memory) && proc.InHostNS() {
			sys.kmsg = openKmsg()
		}
	}()
	r := sys.r
	sys.limitWhy = map[limit.Kind]string{}
	var kinds []limit.Kind // the limits a controller holds
	for _, k := range w.Set.Asked() {
		if _, ok := controllerOf[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if sys.cg != nil {
		w.Enforce(limit.CPUTime, fmt.Sprintf("cgroup cpu.stat, polled every %v", w.Every), true)
		if sys.holdLimits(w, kinds) {
			return
		}
	} else {
		why := "no cgroup for this run"
		if layers.Disabled("cgroup") {
			why = "the cgroup is turned off by CONTAIN_DISABLE"
		}
		for _, k := range w.Set.Asked() {
			sys.limitWhy[k] = why
		}
	}
	if len(kinds) > 0 && !layers.Disabled("cgroup") && sys.intoScope(w, kinds) {
		w.Enforce(limit.CPUTime, fmt.Sprintf("cgroup cpu.stat, polled every %v", w.Every), true)
		delete(sys.limitWhy, limit.CPUTime)
		sys.holdLimits(w, kinds)
	}
	for _, k := range w.Set.Asked() {
		if why := sys.limitWhy[k]; why != "" && !w.Kernel(k) {
			r.log("%s: %s (contain enforces it by sampling)", k.Option(), why)
		}
	}
}

// holdLimits enables the controllers kinds need for the run's cgroup and
// sets their limits there, and tells the crash guard what it changed. It
// reports whether the kernel holds them all.
func (sys *linuxOS) holdLimits(w *limit.Watch, kinds []limit.Kind) bool {
	if len(kinds) == 0 {
		sys.tellGuardCgroup(nil)
		return true
	}
	d, why := sys.cg.cg.Enable(controllersOf(kinds), sys.ours)
	sys.cg.delegation = d
	if leaf := d.Moved(); leaf != "" {
		sys.r.log("moved contain and its crash guard into cgroup %s, so that the kernel lets controllers be enabled for the run's group", leaf)
	}
	sys.tellGuardCgroup(d)
	set, whyNot := sys.cg.cg.SetLimits(cgroup.Limits{Memory: w.Set.Memory, Pids: w.Set.Pids, CPUs: w.Set.CPUs})
	all := true
	for _, k := range kinds {
		c := controllerOf[k]
		if by, ok := set[c]; ok && why[c] == "" {
			if sys.scope != nil {
				by = "systemd scope " + sys.scope.Unit + " " + strings.TrimPrefix(by, "cgroup ")
			}
			w.Enforce(k, by, true)
			delete(sys.limitWhy, k)
			continue
		}
		all = false
		sys.limitWhy[k] = why[c]
		if sys.limitWhy[k] == "" {
			sys.limitWhy[k] = whyNot[c]
		}
	}
	return all
}

// tellGuardCgroup tells the crash guard the run's cgroup and what
// enabling its controllers changed (d: nil, nothing).
func (sys *linuxOS) tellGuardCgroup(d *cgroup.Delegation) {
	// From contain's leaf, the guard would not find the run's group
	// beside it; and what was changed is undone after a crash too.
	o := guard.CgroupOrder{Dir: sys.cg.cg.Dir}
	if d != nil {
		o.Parent, o.Leaf, o.Enabled = d.Parent(), d.Moved(), d.Enabled()
	}
	if err := sys.r.guard.Cgroup(o); err != nil {
		sys.r.log("cannot tell the crash guard the run's cgroup: %v", err)
	}
}

// intoScope asks systemd for a transient scope, delegated to contain's
// user, and to move contain into it (scope.Start), where contain could
// not hold the limits in a cgroup of its own; the run's group is made
// again, in the scope. The group contain made before, if any, goes then,
// with what enabling its controllers changed; without a scope it stays
// the run's group. Why there is no scope is added to each limit's reason.
func (sys *linuxOS) intoScope(w *limit.Watch, kinds []limit.Kind) bool {
	r := sys.r
	fail := func(why string) bool {
		for _, k := range kinds {
			sys.limitWhy[k] += "; and no systemd scope: " + why
		}
		return false
	}
	if layers.Disabled("systemd") {
		return fail("turned off by CONTAIN_DISABLE")
	}
	if missing := cgroup.Missing(controllersOf(kinds)); len(missing) > 0 {
		// A hybrid layout: a scope would have none of them either.
		return fail(fmt.Sprintf("cgroup v2 has no %s controller here", strings.Join(missing, ", ")))
	}
	s, err := scope.Start(r.self, "contain run: "+text.Shorten(text.CommandLine(r.o.Args, "")))
	if err != nil {
		// The group contain made, without the limits' controllers, still
		// holds the tree (where there is no systemd: a container's own
		// cgroup namespace).
		return fail(err.Error())
	}
	if sys.cg != nil {
		// Empty, now that contain has left: it goes, with what enabling
		// its controllers changed.
		sys.cg.remove()
		sys.cg, r.grp = nil, noGroup{}
	}
	sys.scope = s
	r.log("systemd (%s) moved contain into %s, a cgroup delegated to it: %s", s.Manager, s.Unit, s.Dir)
	cg, err := cgroup.New(r.self)
	if err != nil {
		return fail(err.Error())
	}
	sys.cg = &cgroupGroup{cg: cg, log: r.log, collect: r.o.Collect}
	r.grp = sys.cg
	return true
}

// kernelWhy says why the kernel does not hold limit k.
func (sys *linuxOS) kernelWhy(k limit.Kind) string { return sys.limitWhy[k] }

// ours reports whether pid is contain, its crash guard or its early shim:
// the processes contain may move out of its parent cgroup. A child contain
// did not start (one its shell forked before it executed contain) is not.
func (sys *linuxOS) ours(pid int) bool {
	r := sys.r
	switch {
	case pid == r.self:
		return true
	case pid == r.guard.PID():
		return true
	case pid == r.o.Prepared.shimPID():
		return true
	}
	return false
}

// freezable reports whether the tree can be stopped by cgroup.freeze.
func (sys *linuxOS) freezable() bool { return sys.strong() }

// freeze and frozen: a group the reaper removed as COMMAND ended holds
// nothing to freeze (and no cgroup.freeze to read).
func (sys *linuxOS) freeze(on bool) error {
	if sys.cg.early.Load() {
		return nil
	}
	return sys.cg.cg.Freeze(on)
}

func (sys *linuxOS) frozen() bool { return sys.cg.early.Load() || sys.cg.cg.Frozen() }

// sampleGroup measures the tree from its cgroup: its processes' resident
// memory and count, and cpu.stat for the CPU time of everything that ever
// ran in it. False: there is no cgroup.
func (sys *linuxOS) sampleGroup(l *limiter, s *limit.Sample) bool {
	if !sys.strong() {
		return false
	}
	pids := sys.r.grp.procs() // the live ones: a zombie has left cgroup.procs
	s.Procs = len(pids)
	// Each process's resident memory only where contain holds --memory
	// itself: a count of processes is one read of cgroup.procs.
	if w := l.Watch(); w.Set.Has(limit.Memory) && !w.Kernel(limit.Memory) {
		buf := make([]byte, 1024)
		for _, pid := range pids {
			if u, _, err := proc.UsageOf(pid, buf); err == nil {
				s.Memory += u.RSS
			}
		}
	}
	if l.Closing() {
		return true // the group may be gone: CPU time is no longer held
	}
	cpu, err := sys.cg.cg.CPUUsage()
	if err != nil {
		sys.r.log("%v", err)
	}
	s.CPU = cpu
	return true
}

// shimReapedCPU is the CPU time of the processes the shim reaped (its
// children's, in its own stat).
func (sys *linuxOS) shimReapedCPU() time.Duration { return sys.r.shim.ReapedCPU() }

// kernelEvents reads, once COMMAND has ended and before the cgroup goes,
// what the kernel did of the limits it held: the peaks, OOM kills for the
// run's memory.max (memory.events.local counts them) or for a limit above
// it, forks that pids.max refused, throttling by cpu.max.
func (sys *linuxOS) kernelEvents() limit.Outcome {
	if !sys.strong() {
		return limit.Outcome{}
	}
	e := sys.cg.cg.Events()
	o := limit.Outcome{MemoryPeak: e.MemoryPeak, PidsPeak: e.PidsPeak,
		Refused: e.ForksRefused, RefusedWhat: "fork(s) (pids.events max)",
		Throttled: e.Throttled, ThrottledTime: e.ThrottledTime}
	if e.OwnLimit > 0 {
		o.OOMKills = e.OOMKills
	} else {
		o.OtherOOMKills = e.OOMKills
	}
	if o.OOMKills > 0 {
		o.OOMVictims = sys.oomVictims()
	}
	if sys.kmsg > 0 {
		unix.Close(sys.kmsg)
		sys.kmsg = 0
	}
	return o
}

// oomVictims are the processes the OOM killer ended for the run's own
// memory limit: from the kernel's log where contain could open it, else
// the members contain reaped that died of a SIGKILL it had not sent.
func (sys *linuxOS) oomVictims() []report.Holder {
	if sys.kmsg > 0 {
		if v := oomVictims(readKmsg(sys.kmsg), memcgPath(sys.cg.cg.Dir)); len(v) > 0 {
			return v
		}
	}
	if l, ok := sys.r.lim.(*limiter); ok {
		// The largest first: the one that held most of the limit.
		v := l.killedUnsent()
		slices.SortStableFunc(v, func(a, b report.Holder) int {
			return cmp.Compare(rssOf(b), rssOf(a))
		})
		return v
	}
	return nil
}

func rssOf(h report.Holder) uint64 {
	if h.RSSBytes == nil {
		return 0
	}
	return *h.RSSBytes
}

// sampled gives up what the kernel held (the run's cgroup refused
// COMMAND, for why): contain samples every limit asked for, --cpus too.
func (sys *linuxOS) sampled(why string) {
	sys.r.lim.sampled()
	for _, k := range sys.r.o.Limits.Asked() {
		sys.limitWhy[k] = why
	}
}

// sampled: contain samples every limit asked for, --cpus too.
func (l *limiter) sampled() {
	for _, k := range l.r.o.Limits.Asked() {
		l.Watch().Sampled(k)
	}
}

// forksRefused reads the run's cgroup's pids.events: the forks the
// kernel refused for pids.max so far.
func (sys *linuxOS) forksRefused() uint64 {
	if !sys.strong() {
		return 0
	}
	return sys.cg.cg.ForksRefused()
}
