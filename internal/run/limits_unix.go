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

	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
)

// limiter holds a run's whole-tree limits on Linux and macOS: what the
// kernel holds (a cgroup's memory.max, pids.max, cpu.max, set up by the
// OS's kernelLimits) it only observes; the rest it enforces by sampling
// the tree, every limit.Every while it is steady and every limit.Fast
// while it grows toward a limit, and --cpus without cpu.max by stopping
// the tree whenever it has used its share (freezing the cgroup where there
// is one, else SIGSTOP and SIGCONT to every member, as cpulimit does).
// Without a cgroup every scan of the tracker counts the tree too: the
// process limit is checked on each, whichever goroutine made it.
//
// A memory or process limit exceeded stops the tree at once (halt: the
// cgroup frozen, else SIGSTOP to each member, the newest first, until a
// scan finds none running), so that a fork bomb cannot outrun the kill
// that follows; it holds while COMMAND runs and while its leftovers are
// ended after it, until the group is closed.
type limiter struct {
	w        *limit.Watch
	throttle *limit.Throttle // nil: no --cpus, or cpu.max holds it
	over     chan overLimit  // to the main loop
	// reapedCPU is the CPU time, in ns, of the processes contain reaped
	// (each with the children it waited for).
	reapedCPU atomic.Int64
	last      limit.Sample // the tree's CPU time never goes back
	halted    atomic.Bool  // the tree is stopped for a kill
	closing   atomic.Bool  // COMMAND has ended: no main loop reads over

	mu   sync.Mutex
	sent [4]bool   // a limit already acted on
	end  *LimitEnd // the limit that ended the run

	done, stopped chan struct{} // the sampling goroutine's, once started
}

// limitPace says how often contain samples what it holds itself.
var limitPace = fmt.Sprintf("at least every %v, every %v while the tree grows", limit.Every, limit.Fast)

// overLimit is a limit a sample found exceeded.
type overLimit struct {
	kind   limit.Kind
	sample limit.Sample
}

// setLimits readies the limits before COMMAND starts: what the kernel
// can hold, and, with --strict-limits, a refusal of anything it cannot.
func (r *runner) setLimits() error {
	if !r.o.Limits.Any() {
		return nil
	}
	l := &limiter{w: limit.NewWatch(r.o.Limits), over: make(chan overLimit, 4)}
	r.lim = l
	r.kernelLimits(l.w)
	if r.o.Limits.CPUs > 0 && !l.w.Kernel(limit.CPUs) {
		l.throttle = &limit.Throttle{CPUs: r.o.Limits.CPUs}
		if r.freezable() {
			l.w.Enforce(limit.CPUs, fmt.Sprintf("freezing the cgroup, sampled every %v", l.w.Every), false)
		}
	}
	for _, k := range r.o.Limits.Asked() {
		r.log("%s %s: enforced by %s", k.Option(), r.o.Limits.Show(k), l.w.By(k))
	}
	if r.o.Limits.Strict {
		for _, k := range r.o.Limits.Asked() {
			if !l.w.Kernel(k) {
				return fmt.Errorf("refusing to run: %s %s cannot be enforced by the kernel here (%s), and --strict-limits asks that it be; it would be held by %s", k.Option(), r.o.Limits.Show(k), r.kernelWhy(k), l.w.By(k))
			}
		}
	}
	return nil
}

// enforce samples the tree while COMMAND runs, when a limit needs it. It
// returns the function to call once COMMAND has ended: the throttle and
// the CPU time limit end there, while a memory or process limit holds on
// through the close, until stopLimits.
func (r *runner) enforce() (commandEnded func()) {
	l := r.lim
	if l == nil || !l.w.Sampling() && l.throttle == nil {
		return func() { r.afterCommand() }
	}
	l.done, l.stopped = make(chan struct{}), make(chan struct{})
	sp := &limit.Sampler{Watch: l.w, Throttle: l.throttle, Sample: r.sample, Over: r.exceeded,
		Ended:     l.halted.Load,
		Throttles: func() bool { return !l.closing.Load() },
		Pause:     r.pauseTree,
		Clock:     cpuTime,
		// The sample's own cost stays under a tenth of a CPU (half a CPU
		// while the tree grows toward a limit), however many processes
		// the machine has.
		Next: func(prev, s limit.Sample, last, cost time.Duration) time.Duration {
			next, share := l.w.Pace(prev, s, last)
			return max(next, time.Duration(share)*cost)
		}}
	go func() {
		defer close(l.stopped)
		sp.Run(l.done)
	}()
	return func() { r.afterCommand() }
}

// afterCommand switches the limits to the close: what the main loop was
// told of and did not act on is acted on here.
func (r *runner) afterCommand() {
	l := r.lim
	if l == nil {
		return
	}
	l.closing.Store(true)
	for {
		select {
		case o := <-l.over:
			r.killExceeded(o)
		default:
			return
		}
	}
}

// stopLimits ends the sampling once nothing of the tree is left.
func (r *runner) stopLimits() {
	if l := r.lim; l != nil && l.done != nil {
		close(l.done)
		<-l.stopped
	}
}

// counted takes a scan's count of the tree's live processes: the one
// count of them that the report gives (peak_processes, limits.pids.peak),
// and a check of the process limit when contain holds it, on every scan.
//
// It runs inside the scan (under trackMu): what it does about it runs on
// its own goroutine, which stops first the members this scan saw.
func (r *runner) counted(live []proc.Entry) {
	l := r.lim
	if l == nil || !l.w.Count(len(live)) || !l.first(limit.Pids) {
		return
	}
	seen := make([]member, len(live))
	for i, p := range live {
		seen[i] = member{pid: p.PID, comm: p.Comm, start: p.Start, entry: p}
	}
	go r.act(overLimit{limit.Pids, limit.Sample{At: time.Now(), Procs: len(live)}}, seen)
}

// first reports whether limit k is found exceeded for the first time.
func (l *limiter) first(k limit.Kind) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent[k] {
		return false
	}
	l.sent[k] = true
	return true
}

// exceeded acts, once, on limit k found exceeded by sample s.
func (r *runner) exceeded(k limit.Kind, s limit.Sample) {
	if r.lim.first(k) {
		r.act(overLimit{k, s}, nil)
	}
}

// act stops the tree for a memory or process limit, then has it killed:
// by the main loop while COMMAND runs (which also acts on the CPU time
// limit, as the timeout), else here.
//
// seen: the members the scan that found it saw (nil: none known), stopped
// before anything else, without another scan.
func (r *runner) act(o overLimit, seen []member) {
	l := r.lim
	if o.kind == limit.CPUTime {
		if !l.closing.Load() {
			l.over <- o // one per limit: the channel holds all of them
		}
		return
	}
	r.halt(seen)
	if l.closing.Load() {
		r.killExceeded(o)
		return
	}
	l.over <- o
	// COMMAND may have ended meanwhile, with no main loop left to read it.
	if l.closing.Load() {
		r.afterCommand()
	}
}

// halt stops the whole tree at once, for the kill that follows a limit
// exceeded: the cgroup frozen where there is one, else stopEach.
func (r *runner) halt(seen []member) {
	l := r.lim
	if !l.halted.CompareAndSwap(false, true) {
		return
	}
	if r.freezable() && r.freeze(true) == nil {
		return
	}
	r.stopEach(seen, false)
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
// caller says so to throttleStop (the limiter's halted, or selfStopped).
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

// killExceeded kills the tree for a memory or process limit exceeded
// after COMMAND ended, while its leftovers are ended: at once, not after
// the grace period; contain exits 137 as it would have before.
func (r *runner) killExceeded(o overLimit) {
	l := r.lim
	if o.kind == limit.CPUTime {
		return
	}
	if !l.setEnd(func() *LimitEnd { return endBy(l.w, o.kind, "killed the tree", limit.Said(o.kind, o.sample)) }) {
		return
	}
	r.log("%s %s exceeded (%s) after COMMAND ended: killing what is left of the tree", o.kind.Words(), r.o.Limits.Show(o.kind), limit.Said(o.kind, o.sample))
	r.grp.kill()
	for _, m := range newestFirst(r.members()) {
		if r.signal(m, unix.SIGKILL) == nil {
			r.log("killed %d (%s)", m.pid, m.comm)
		}
	}
}

// setEnd records the limit that ended the run (made by end, which
// records the limit's action), unless one already did.
func (l *limiter) setEnd(end func() *LimitEnd) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.end != nil {
		return false
	}
	l.end = end()
	return true
}

// ending is the limit that ended the run, if any.
func (l *limiter) ending() *LimitEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// sample measures the whole tree: from the cgroup where there is one,
// else from the tracker's scan, with what contain (and the shim) reaped.
func (r *runner) sample() limit.Sample {
	l := r.lim
	s := limit.Sample{At: time.Now()}
	if !r.sampleGroup(&s) {
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
		s.CPU += time.Duration(l.reapedCPU.Load()) + r.shimReapedCPU()
	}
	s.CPU = max(s.CPU, l.last.CPU)
	l.last = s
	return s
}

// pauseTree stops the tree for d (or until done), then lets it go on. It
// reports false when done came first.
func (r *runner) pauseTree(d time.Duration, done <-chan struct{}) bool {
	// A halt for a limit meanwhile (a scan elsewhere found the tree past
	// it) is not undone.
	halted := &r.lim.halted
	if r.freezable() {
		if err := r.freeze(true); err == nil {
			defer func() {
				if !halted.Load() {
					r.freeze(false)
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
			if !halted.Load() {
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

// throttleStop reports whether a stop of COMMAND by SIGSTOP may come from
// the --cpus throttle, or a halt for a limit, rather than from a person: then the main loop does
// not follow it (Ctrl-Z, SIGTSTP, still is).
func (r *runner) throttleStop(sig unix.Signal) bool {
	return sig == unix.SIGSTOP && (r.selfStopped.Load() || r.lim != nil && (r.lim.throttle != nil || r.lim.halted.Load()))
}

// overLimits is the main loop's channel of exceeded limits (nil: none).
func (r *runner) overLimits() <-chan overLimit {
	if r.lim == nil {
		return nil
	}
	return r.lim.over
}

// limitExceeded acts on a limit that a sample found exceeded, unless a
// limit already ended the run: memory or processes kill the tree; CPU time
// times the run out, through the loop's timeOut. It reports whether it did.
func (r *runner) limitExceeded(o overLimit, timeOut func(string) string) (timedOut bool) {
	l := r.lim
	said := limit.Said(o.kind, o.sample)
	switch o.kind {
	case limit.CPUTime:
		if !l.setEnd(func() *LimitEnd { return endBy(l.w, o.kind, "sent the timeout signal "+signals.Name(r.o.Signal), said) }) {
			return false
		}
		timeOut(fmt.Sprintf("%s %s reached (%s)", o.kind.Words(), r.o.Limits.Show(o.kind), said))
		return true
	default:
		if !l.setEnd(func() *LimitEnd { return endBy(l.w, o.kind, "killed the tree", said) }) {
			return false
		}
		r.log("%s %s exceeded (%s): killing the tree, the newest processes first", o.kind.Words(), r.o.Limits.Show(o.kind), said)
		r.killGroup()
		return false
	}
}

// reapedCPU adds the CPU time of a process contain reaped.
func (l *limiter) reaped(ru *unix.Rusage) {
	if l != nil && ru != nil {
		l.reapedCPU.Add(ru.Utime.Nano() + ru.Stime.Nano())
	}
}

// finishLimits completes the account once COMMAND has ended, before the
// group goes: what the kernel did (an OOM kill, refused forks).
func (r *runner) finishLimits(res *Result) {
	if r.lim == nil {
		return
	}
	res.Limits, res.Limit = r.lim.w, r.lim.ending()
}

// sampledProcs is the most live processes contain counted in the tree,
// when it holds the process limit itself: the report's peak_processes
// is then this same count, as limits.pids.peak is.
func (r *runner) sampledProcs() (int, bool) {
	l := r.lim
	if l == nil || !l.w.Set.Has(limit.Pids) || l.w.Kernel(limit.Pids) {
		return 0, false
	}
	n, ok := l.w.Peak(limit.Pids)
	return int(n), ok
}
