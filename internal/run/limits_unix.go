//go:build linux || darwin

package run

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/report"
)

// limiter is a run's limit enforcer on Linux and macOS (limit.Enforcer),
// over the tree as these OSes hold it: what the kernel holds (a cgroup's
// memory.max, pids.max, cpu.max, set up by the OS's kernelLimits) it only
// observes; the rest it samples, every limit.Every while the tree is
// steady and every limit.Fast while it grows toward a limit, and --cpus
// without cpu.max it holds by stopping the tree whenever it has used its
// share (freezing the cgroup where there is one, else SIGSTOP and SIGCONT
// to every member, as cpulimit does). Without a cgroup every scan of the
// tracker counts the tree too: the process limit is checked on each,
// whichever goroutine made it.
//
// A memory or process limit exceeded halts the tree at once (the cgroup
// frozen, else SIGSTOP to each member, the newest first, until a scan
// finds none running), so that a fork bomb cannot outrun the kill that
// follows; it holds while COMMAND runs and while its leftovers are ended
// after it, until the group is closed.
type limiter struct {
	*limit.Enforcer
	r *runner
	// reapedCPU is the CPU time, in ns, of the processes contain reaped
	// (each with the children it waited for).
	reapedCPU atomic.Int64
	// killed are the members contain reaped dead of a SIGKILL it had not
	// sent (killedBy): where the kernel holds memory, its OOM killer's.
	mu     sync.Mutex
	killed []report.Holder
	// watchStop ends the watch of the kernel's refused forks (enforce);
	// nil: none.
	watchStop func()
}

// killedBy records a member reaped dead of a SIGKILL contain had not
// sent, with its peak resident memory.
func (l *limiter) killedBy(pid int, name string, ru *unix.Rusage) {
	h := report.Holder{PID: pid, Comm: name}
	if ru != nil {
		rss := account.MaxRSS(ru)
		h.RSSBytes = &rss
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = append(l.killed, h)
}

// killedUnsent is what killedBy recorded.
func (l *limiter) killedUnsent() []report.Holder {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.killed)
}

var _ limit.Halter = (*limiter)(nil)

// limitPace says how often contain samples what it holds itself.
func limitPace() string {
	return fmt.Sprintf("at least every %v, every %v while the tree grows", limit.Every, limit.Fast)
}

// treeLimits is the runner's hold on the whole-tree limits: a *limiter
// when one is asked (setLimits), noLimits otherwise (nolimits_unix.go),
// so that a run without limits enters none of their code.
type treeLimits interface {
	// enforce samples the tree while COMMAND runs, when a limit needs
	// it, and returns the function to call once COMMAND has ended: the
	// throttle and the CPU time limit end there, while a memory or
	// process limit holds on through the close, until stop.
	enforce() (commandEnded func())
	stop()
	// count takes a scan's count of the tree's live processes.
	count(live []proc.Entry)
	// kernelOutcome accounts for what the kernel did of the limits it
	// held, once COMMAND has ended and before the group goes.
	kernelOutcome()
	// holdsStops: the tree may be stopped by the throttle or halted for
	// a limit (a SIGSTOP of COMMAND is then no person's); halted: it is
	// halted for a limit's kill.
	holdsStops() bool
	halted() bool
	// hits is the main loop's channel of exceeded limits (nil: none);
	// exceeded acts on one.
	hits() <-chan limit.Hit
	exceeded(h limit.Hit, timeOut func(string) string) (timedOut bool)
	// reaped adds the CPU time of a process contain reaped; killedBy
	// records one reaped dead of a SIGKILL contain had not sent.
	reaped(ru *unix.Rusage)
	killedBy(pid int, name string, ru *unix.Rusage)
	// finish completes the account once the group is closed.
	finish(res *Result)
	// sampledProcs is the most live processes contain counted, when it
	// holds the process limit itself.
	sampledProcs() (int, bool)
	// sampled gives up what the kernel held: contain samples every
	// limit (the OS's sampled says why).
	sampled()
}

// setLimits readies the limits before COMMAND starts: what the kernel
// can hold, and, with --strict-limits, a refusal of anything it cannot.
// The lifecycle calls it only when a limit is asked for.
func (r *runner) setLimits() error {
	l := &limiter{r: r}
	l.Enforcer = limit.NewEnforcer(r.o.Limits, l, r.log)
	// The sample's own cost stays under a tenth of a CPU (half a CPU
	// while the tree grows toward a limit), however many processes the
	// machine has: measured in contain's CPU time.
	l.Clock = cpuTime
	r.lim = l
	w := l.Watch()
	r.sys.kernelLimits(w)
	if l.Throttling() && r.sys.freezable() {
		w.Enforce(limit.CPUs, fmt.Sprintf("freezing the cgroup, sampled every %v", w.Every), false)
	}
	for _, k := range r.o.Limits.Asked() {
		r.log("%s %s: enforced by %s", k.Option(), r.o.Limits.Show(k), w.By(k))
	}
	return l.Refuse(r.sys.kernelWhy)
}

func (l *limiter) enforce() (commandEnded func()) {
	l.Start()
	if !l.Watch().Kernel(limit.Pids) {
		return l.CommandEnded
	}
	// The kernel refuses forks past pids.max and tells no one: its count
	// is read every refusedEvery while COMMAND runs, with what has
	// started the most of the tree's processes, so that at the first
	// refusal that is named as the tree stood then, or just before (a
	// shell that cannot fork exits at once, its children left to
	// contain: at the end there is often nothing left to name).
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(refusedEvery)
		defer t.Stop()
		var last []report.Holder
		for {
			select {
			case <-done:
				return
			case <-t.C:
				refused := l.r.sys.forksRefused() > 0
				if now := limit.Top(l.HeldBy(limit.Pids, l.groupMembers()), 3); len(now) > 0 {
					last = now
				}
				if refused {
					l.Watch().Held(limit.Pids, last)
					return
				}
			}
		}
	}()
	l.watchStop = func() {
		select {
		case <-done:
		default:
			close(done)
		}
		<-stopped
	}
	return func() {
		l.watchStop()
		l.CommandEnded()
	}
}

// groupMembers are the processes of the run's cgroup, each read from its
// own stat: the tree where the kernel holds the process limit, without a
// scan of every process of the machine.
func (l *limiter) groupMembers() []member {
	ms := []member{} // not nil: HeldBy scans for nil
	for _, pid := range l.r.grp.procs() {
		if e, ok := l.r.procs.entryOf(pid); ok && !e.Zombie {
			ms = append(ms, member{pid: pid, comm: e.Comm, start: e.Start, entry: e})
		}
	}
	return ms
}

// refusedEvery is how often contain reads the kernel's count of refused
// forks while COMMAND runs, where pids.max holds the process limit.
const refusedEvery = 100 * time.Millisecond

func (l *limiter) stop() {
	if l.watchStop != nil {
		l.watchStop()
	}
	l.Stop()
}

// count takes a scan's count of the tree's live processes: the one
// count of them that the report gives (peak_processes, limits.pids.peak),
// and a check of the process limit when contain holds it, on every scan.
//
// It runs inside the scan (under trackMu): what it does about it runs on
// its own goroutine, which halts first the members this scan saw.
func (l *limiter) count(live []proc.Entry) {
	if !l.Watch().Count(len(live)) || !l.First(limit.Pids) {
		return
	}
	seen := make([]member, len(live))
	for i, p := range live {
		seen[i] = member{pid: p.PID, comm: p.Comm, start: p.Start, entry: p}
	}
	go l.Act(limit.Hit{Kind: limit.Pids, What: limit.Said(limit.Pids, limit.Sample{Procs: len(live)}), Seen: seen})
}

// Halt stops the whole tree at once, for the kill that follows a limit
// exceeded: the cgroup frozen where there is one, else stopEach, from
// the members the scan that found it saw (seen: []member; nil: none
// known), without another scan.
func (l *limiter) Halt(seen any) {
	r := l.r
	if r.sys.freezable() && r.sys.freeze(true) == nil {
		return
	}
	ms, _ := seen.([]member)
	r.stopEach(ms, false)
}

// stopEach stops every process of the tree by SIGSTOP: to COMMAND's
// process group first, in one signal (the kernel stops every process in
// it, a fork under way included: a fork loop or a bomb that stays in the
// group stops whole at once), then to every member, the newest first (in
// a fork bomb the newest are those forking), then again to what the
// previous round missed (children forked before their parent stopped)
// until a scan finds no member it has not stopped. A stopped process
// forks nothing, so the kill that follows meets a tree that no longer
// grows. It returns the members of the last scan, all of them stopped
// (seen: the members a scan just found, else nil; notNested: the members
// of a nested session are left to it).
//
// A stop of COMMAND is then contain's own, not a person's Ctrl-Z: the
// caller says so to throttleStop (the limiter's Halted, or selfStopped).
func (r *runner) stopEach(seen []member, notNested bool) []member {
	stopped := map[proc.ID]bool{}
	var ms []member
	for round := 0; round < 100; round++ {
		ms = seen
		if round > 0 || ms == nil {
			ms = r.members()
		}
		if notNested {
			ms = r.notNested(ms)
		}
		if round == 0 && inGroup(ms, r.pid) {
			unix.Kill(-r.pid, unix.SIGSTOP)
		}
		var todo []member
		for _, m := range ms {
			if !stopped[proc.ID{PID: m.pid, Start: m.start}] {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			break
		}
		for _, m := range newestFirst(todo) {
			stopped[proc.ID{PID: m.pid, Start: m.start}] = true
			r.signal(m, unix.SIGSTOP)
		}
	}
	return ms
}

// inGroup reports whether a member is in process group pgrp: the group
// then exists, and its number cannot name another one.
func inGroup(ms []member, pgrp int) bool {
	if pgrp <= 0 {
		// No COMMAND (a held session), or none yet: no group. A member's
		// process group reads 0 where its leader is out of this PID
		// namespace (unshare --pid --fork from a shell), and kill(-0)
		// is contain's own group: the library's program, stopped.
		return false
	}
	for _, m := range ms {
		if m.entry.Pgrp == pgrp && m.start != 0 {
			return true
		}
	}
	return false
}

// newestFirst orders members by their start, the latest first.
func newestFirst(ms []member) []member {
	slices.SortStableFunc(ms, func(a, b member) int {
		if c := cmp.Compare(b.start, a.start); c != 0 {
			return c
		}
		return cmp.Compare(b.pid, a.pid)
	})
	return ms
}

// Kill kills the tree for a memory or process limit exceeded: the whole
// group, the newest processes first, while COMMAND runs; after it ended,
// while its leftovers are ended, at once, not after the grace period.
// contain exits 137 either way.
func (l *limiter) Kill(h limit.Hit, late bool) {
	r := l.r
	emitLimit(r.o.Events, l.Watch(), h.Kind, h.What, "")
	if !late {
		r.log("%s %s exceeded (%s): killing the tree, the newest processes first", h.Kind.Words(), r.o.Limits.Show(h.Kind), h.What)
		r.killGroup()
		return
	}
	r.log("%s %s exceeded (%s) after COMMAND ended: killing what is left of the tree", h.Kind.Words(), r.o.Limits.Show(h.Kind), h.What)
	r.grp.kill()
	for _, m := range newestFirst(r.members()) {
		if r.signal(m, unix.SIGKILL) == nil {
			r.log("killed %d (%s)", m.pid, m.comm)
			r.emitSignal("SIGKILL", m, report.PhaseLimit)
		}
	}
}

// Sample measures the whole tree: from the cgroup where there is one,
// else from the tracker's scan, with what contain (and the shim) reaped.
func (l *limiter) Sample() limit.Sample {
	r := l.r
	s := limit.Sample{At: time.Now()}
	if !r.sys.sampleGroup(l, &s) {
		live, _ := r.scanAll()
		buf := make([]byte, 1024)
		for _, p := range live {
			u, child := p.Usage, p.ChildCPU
			if !u.Known {
				u, child, _ = proc.UsageOf(p.PID, buf)
			}
			s.Memory += u.RSS
			s.CPU += u.CPU + child
			s.Procs++
		}
		s.CPU += time.Duration(l.reapedCPU.Load()) + r.sys.shimReapedCPU()
	}
	return s
}

// Pause stops the tree for d (or until done), then lets it go on. It
// reports false when done came first.
func (l *limiter) Pause(d time.Duration, done <-chan struct{}) bool {
	r := l.r
	// A halt for a limit meanwhile (a scan elsewhere found the tree past
	// it) is not undone.
	if r.sys.freezable() {
		if err := r.sys.freeze(true); err == nil {
			defer func() {
				if !l.Halted() {
					r.sys.freeze(false)
				}
			}()
			return sleepOr(d, done)
		}
	}
	stopped := r.notNested(r.members())
	for _, m := range stopped {
		r.signal(m, unix.SIGSTOP)
	}
	defer func() {
		for _, m := range stopped {
			if !l.Halted() {
				r.signal(m, unix.SIGCONT)
			}
		}
	}()
	return sleepOr(d, done)
}

func sleepOr(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// Outcome is what the kernel did of the limits it held (the OS's
// kernelEvents).
func (l *limiter) Outcome() limit.Outcome { return l.r.sys.kernelEvents() }

func (l *limiter) kernelOutcome() { l.KernelOutcome() }

func (l *limiter) holdsStops() bool { return l.Throttling() || l.Halted() }

func (l *limiter) halted() bool { return l.Halted() }

func (l *limiter) hits() <-chan limit.Hit { return l.Hits() }

// exceeded acts on a limit found exceeded (limit.Enforcer's Exceeded): a
// CPU time limit times the run out through the loop's timeOut, and counts
// as the timeout signal sent.
func (l *limiter) exceeded(h limit.Hit, timeOut func(string) string) (timedOut bool) {
	return l.Exceeded(h, func(why string) string {
		did := "sent the timeout signal " + signals.Name(l.r.o.Signal)
		emitLimit(l.r.o.Events, l.Watch(), h.Kind, h.What, did)
		timeOut(why)
		return did
	})
}

// reaped adds the CPU time of a process contain reaped.
func (l *limiter) reaped(ru *unix.Rusage) {
	if ru != nil {
		l.reapedCPU.Add(ru.Utime.Nano() + ru.Stime.Nano())
	}
}

// finish completes the account once the group is closed.
func (l *limiter) finish(res *Result) {
	res.Limits = l.Watch()
	if e := l.End(); e != nil {
		res.Limit = &LimitEnd{Kind: e.Kind, Message: e.Message}
	}
}

// sampledProcs is the most live processes contain counted in the tree,
// when it holds the process limit itself: the report's peak_processes
// is then this same count, as limits.pids.peak is.
func (l *limiter) sampledProcs() (int, bool) {
	w := l.Watch()
	if !w.Set.Has(limit.Pids) || w.Kernel(limit.Pids) {
		return 0, false
	}
	n, ok := w.Peak(limit.Pids)
	return int(n), ok
}

// ourStop reports whether a stop of COMMAND by SIGSTOP may come from
// contain itself (the --cpus throttle, a halt for a limit, the end of the
// tree) rather than from a person: then the main loop does not follow it
// (Ctrl-Z, SIGTSTP, still is).
func (r *runner) ourStop(sig unix.Signal) bool {
	return sig == unix.SIGSTOP && (r.selfStopped.Load() || r.lim.holdsStops())
}

// HeldBy reads what held limit k (limit.Attributor), the tree halted:
// each member's resident memory, or how many of the members each one
// started (its children among them). seen is the members the finding saw
// ([]member; nil: scanned now).
func (l *limiter) HeldBy(k limit.Kind, seen any) []report.Holder {
	r := l.r
	ms, _ := seen.([]member)
	if ms == nil {
		ms = r.members()
	}
	var out []report.Holder
	switch k {
	case limit.Memory:
		buf := make([]byte, 1024)
		for _, m := range ms {
			u := m.entry.Usage
			if !u.Known {
				u, _, _ = proc.UsageOf(m.pid, buf)
			}
			if u.Known && u.RSS > 0 {
				rss := u.RSS
				out = append(out, report.Holder{PID: m.pid, Comm: m.comm, RSSBytes: &rss})
			}
		}
	case limit.Pids:
		in := make(map[int]member, len(ms))
		for _, m := range ms {
			in[m.pid] = m
		}
		children := map[int]int{}
		for _, m := range ms {
			if _, ok := in[m.entry.PPID]; ok {
				children[m.entry.PPID]++
			}
		}
		for pid, n := range children {
			out = append(out, report.Holder{PID: pid, Comm: in[pid].comm, Children: n})
		}
	}
	return out
}
