//go:build linux || darwin

package run

import (
	"fmt"
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
// the tree every limit.Every, and --cpus without cpu.max by stopping the
// tree whenever it has used its share (freezing the cgroup where there is
// one, else SIGSTOP and SIGCONT to every member, as cpulimit does).
type limiter struct {
	w        *limit.Watch
	throttle *limit.Throttle // nil: no --cpus, or cpu.max holds it
	over     chan overLimit  // to the main loop
	sent     [4]bool         // a limit already sent to the main loop
	end      *LimitEnd       // the limit that ended the run, set by the main loop
	// reapedCPU is the CPU time, in ns, of the processes contain reaped
	// (each with the children it waited for).
	reapedCPU atomic.Int64
	last      limit.Sample // the tree's CPU time never goes back
}

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
				return fmt.Errorf("--strict-limits: %s %s cannot be enforced by the kernel here (%s): %s", k.Option(), r.o.Limits.Show(k), r.kernelWhy(k), l.w.By(k))
			}
		}
	}
	return nil
}

// enforce samples the tree while COMMAND runs, when a limit needs it. It
// returns the function that stops it, which leaves the tree running.
func (r *runner) enforce() (stop func()) {
	l := r.lim
	if l == nil || !l.w.Sampling() && l.throttle == nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			began := cpuTime()
			s := r.sample()
			if k, over := l.w.Check(s); over && !l.sent[k] {
				l.sent[k] = true
				l.over <- overLimit{k, s}
			}
			if l.throttle != nil {
				if d := l.throttle.Step(s); d > 0 {
					l.w.Hit(limit.CPUs, "throttled")
					if !r.pauseTree(d, done) {
						return
					}
				}
			}
			// The sample's own cost stays under a tenth of a CPU, however
			// many processes the machine has.
			t.Reset(max(l.w.Every, 10*(cpuTime()-began)))
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
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
	if r.freezable() {
		if err := r.freeze(true); err == nil {
			defer r.freeze(false)
			return sleepOr(d, done)
		}
	}
	stopped := r.notNested(r.members())
	for _, m := range stopped {
		r.signal(m, unix.SIGSTOP)
	}
	defer func() {
		for _, m := range stopped {
			r.signal(m, unix.SIGCONT)
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
// the --cpus throttle rather than from a person: then the main loop does
// not follow it (Ctrl-Z, SIGTSTP, still is).
func (r *runner) throttleStop(sig unix.Signal) bool {
	return r.lim != nil && r.lim.throttle != nil && sig == unix.SIGSTOP
}

// overLimits is the main loop's channel of exceeded limits (nil: none).
func (r *runner) overLimits() <-chan overLimit {
	if r.lim == nil {
		return nil
	}
	return r.lim.over
}

// limitExceeded acts on a limit that a sample found exceeded: memory or
// processes kill the tree; CPU time acts as the timeout. It reports
// whether the timeout's --kill-after should start.
func (r *runner) limitExceeded(o overLimit) (timedOut bool) {
	l := r.lim
	if l.end != nil {
		return false
	}
	switch o.kind {
	case limit.CPUTime:
		l.end = endBy(l.w, o.kind, "sent the timeout signal "+signals.Name(r.o.Signal), limit.Said(o.kind, o.sample))
		r.timeout(fmt.Sprintf("%s %s reached (%s)", o.kind.Words(), r.o.Limits.Show(o.kind), limit.Said(o.kind, o.sample)))
		return true
	default:
		l.end = endBy(l.w, o.kind, "killed the tree", limit.Said(o.kind, o.sample))
		r.log("%s %s exceeded (%s): killing the tree", o.kind.Words(), r.o.Limits.Show(o.kind), limit.Said(o.kind, o.sample))
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
	res.Limits, res.Limit = r.lim.w, r.lim.end
}
