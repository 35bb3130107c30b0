package limit

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/contain-cli/contain/report"
)

// Sample is one look at the whole tree.
type Sample struct {
	At     time.Time
	Memory uint64        // resident bytes of the live processes, summed
	Procs  int           // live processes
	CPU    time.Duration // user + system of the whole tree so far, the ended included
}

// Every is how often contain samples the tree when it enforces a limit
// itself and nothing is growing toward one: a tree growing by 100 MiB/s
// is stopped within some 10 MiB of its limit, plus what it grows while
// the tree is killed.
const Every = 50 * time.Millisecond

// Fast is the pause between samples while the tree grows (new processes,
// or memory past half its limit): the tracker's fastest pace. A fork loop
// starts hundreds of processes in Every; at Fast it is seen within a few
// of them.
const Fast = 5 * time.Millisecond

// The least pause between samples, as a multiple of what the last one
// cost contain in CPU time: a tenth of a CPU at most while the tree is
// steady, half a CPU while it grows toward a limit (which ends soon:
// either it stops growing or it is killed).
const (
	SteadyShare  = 10
	GrowingShare = 2
)

// Watch is one run's limits: how each is held, what was seen of the tree,
// which was exceeded and what was done. It is safe for concurrent use.
type Watch struct {
	Set Set
	// Every is the sampling interval, for what is enforced by sampling.
	Every time.Duration

	mu       sync.Mutex
	by       [nKinds]string // what enforces each limit
	kernel   [nKinds]bool   // the kernel enforces it: contain only observes
	peak     [nKinds]float64
	seen     [nKinds]bool
	exceeded [nKinds]bool
	action   [nKinds]string
	remark   [nKinds]string
	held     map[Kind][]report.Holder // what held each limit exceeded (Held)
	window   Sample                   // the start of the current 1-second window for the CPU share
}

// NewWatch starts the account of limits s, each enforced by sampling
// until Enforce says otherwise.
func NewWatch(s Set) *Watch {
	w := &Watch{Set: s, Every: Every}
	for _, k := range s.Asked() {
		w.by[k] = w.sampled(k)
	}
	return w
}

// sampled names contain's own enforcement of k.
func (w *Watch) sampled(k Kind) string {
	if k == CPUs {
		return fmt.Sprintf("SIGSTOP/SIGCONT, sampled every %v", w.Every)
	}
	if k == Memory || k == Pids {
		return fmt.Sprintf("sampling every %v, every %v while the tree grows", w.Every, Fast)
	}
	return fmt.Sprintf("sampling every %v", w.Every)
}

// Enforce records what holds limit k: by, and whether it is the kernel
// (then contain does not act on what it samples of k).
func (w *Watch) Enforce(k Kind, by string, kernel bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by[k], w.kernel[k] = by, kernel
}

// Sampled hands limit k back to contain's sampling (the kernel's hold
// was lost: a cgroup the kernel refused at the start).
func (w *Watch) Sampled(k Kind) {
	w.Enforce(k, w.sampled(k), false)
}

// Note adds a remark on limit k for the report.
func (w *Watch) Note(k Kind, s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.remark[k] = s
}

// By names what holds limit k.
func (w *Watch) By(k Kind) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[k]
}

// Kernel reports whether the kernel holds limit k.
func (w *Watch) Kernel(k Kind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kernel[k]
}

// Sampling reports whether contain must sample the tree: a limit it holds
// itself, or one whose figure only a sample shows (CPU time, always
// polled; the CPU share's peak).
func (w *Watch) Sampling() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.Set.Asked() {
		if !w.kernel[k] || k == CPUTime {
			return true
		}
	}
	return false
}

// Pace says when to sample next, after s (prev is the sample before it,
// zero for none; last the pause before s): at Fast while the tree grows
// toward a limit contain holds itself (more processes than the sample
// before, or resident memory growing past half its limit), else half as
// long again as last, up to Every. share is the least pause, as a
// multiple of the last sample's own cost (SteadyShare, or GrowingShare
// while it grows). A limit held by the kernel paces nothing.
func (w *Watch) Pace(prev, s Sample, last time.Duration) (next time.Duration, share int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	growing := !prev.At.IsZero() && (w.Set.Has(Pids) && !w.kernel[Pids] && s.Procs > prev.Procs ||
		w.Set.Has(Memory) && !w.kernel[Memory] && s.Memory > prev.Memory && s.Memory >= w.Set.Memory/2)
	if growing {
		return Fast, GrowingShare
	}
	return min(max(last*3/2, Fast), w.Every), SteadyShare
}

// Count records a count of the tree's live processes (a scan's, or a
// sample's) and reports whether it is past a process limit that contain
// holds itself: every count is one figure, the report's peak_processes
// and limits.pids.peak alike.
func (w *Watch) Count(procs int) (over bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(Pids, float64(procs))
	return w.Set.Has(Pids) && !w.kernel[Pids] && procs > w.Set.Pids
}

// Peak is the highest figure seen of limit k (false: none was).
func (w *Watch) Peak(k Kind) (float64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak[k], w.seen[k]
}

// Check takes a sample and returns the limit it exceeds that contain holds
// itself (memory and processes when sampled; CPU time always), if any.
// The CPU share is never exceeded: it throttles.
func (w *Watch) Check(s Sample) (k Kind, over bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(Memory, float64(s.Memory))
	w.note(Pids, float64(s.Procs))
	w.note(CPUTime, s.CPU.Seconds())
	if w.Set.Has(CPUs) {
		switch {
		case w.window.At.IsZero():
			w.window = s
		case s.At.Sub(w.window.At) >= time.Second:
			w.note(CPUs, float64(s.CPU-w.window.CPU)/float64(s.At.Sub(w.window.At)))
			w.window = s
		}
	}
	switch {
	case w.Set.Has(Memory) && !w.kernel[Memory] && s.Memory > w.Set.Memory:
		return Memory, true
	case w.Set.Has(Pids) && !w.kernel[Pids] && s.Procs > w.Set.Pids:
		return Pids, true
	case w.Set.Has(CPUTime) && s.CPU >= w.Set.CPUTime:
		return CPUTime, true
	}
	return 0, false
}

func (w *Watch) note(k Kind, v float64) {
	if w.Set.Has(k) {
		w.peak[k], w.seen[k] = max(w.peak[k], v), true
	}
}

// Observe records a peak that the kernel measured (memory.peak, say).
func (w *Watch) Observe(k Kind, v float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(k, v)
}

// Hit records that limit k was exceeded and what was done; the first
// action stays.
func (w *Watch) Hit(k Kind, action string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.exceeded[k] {
		w.exceeded[k], w.action[k] = true, action
	}
}

// Said says what a sample shows of limit k, for the line that tells it
// was exceeded: "the tree's resident memory reached 112 MiB".
func Said(k Kind, s Sample) string {
	switch k {
	case Memory:
		return "the tree's resident memory reached " + Size(s.Memory)
	case Pids:
		return fmt.Sprintf("%d processes were alive", s.Procs)
	case CPUTime:
		return fmt.Sprintf("the tree used %v of CPU time", s.CPU.Round(time.Millisecond))
	}
	return ""
}

// Message is the line that says limit k was exceeded:
// "memory limit 100 MiB exceeded: the tree's resident memory reached
// 112 MiB (sampling every 50ms); killed the tree".
func (w *Watch) Message(k Kind, what string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := fmt.Sprintf("%s %s exceeded: %s (%s); %s", k.Words(), w.Set.Show(k), what, w.by[k], w.action[k])
	if hs := w.held[k]; len(hs) > 0 {
		m += "; " + heldWords(k) + ": " + report.HolderWords(hs)
	}
	return m
}

// heldWords introduce what held limit k, in its line.
func heldWords(k Kind) string {
	if k == Pids {
		return "most processes started by"
	}
	return "held by"
}

// Held records what held limit k when it was exceeded (report.Limit's
// HeldBy): the first record is kept.
func (w *Watch) Held(k Kind, hs []report.Holder) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held == nil {
		w.held = map[Kind][]report.Holder{}
	}
	if _, ok := w.held[k]; !ok && len(hs) > 0 {
		w.held[k] = hs
	}
}

// Report is the report's limits object; nil when no limit was asked.
func (w *Watch) Report() map[string]report.Limit {
	if w == nil || !w.Set.Any() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]report.Limit{}
	for _, k := range w.Set.Asked() {
		l := report.Limit{Value: w.Set.Value(k), Unit: k.Unit(), EnforcedBy: w.by[k], Exceeded: w.exceeded[k], Action: w.action[k], Note: w.remark[k], HeldBy: w.held[k]}
		// A figure past a limit is the limit exceeded, whatever was done
		// of it: the report never shows a peak over the value beside
		// "exceeded": false.
		if (k == Memory || k == Pids) && w.seen[k] && w.peak[k] > w.Set.Value(k) && !l.Exceeded {
			l.Exceeded, l.Action = true, "none: seen only as the tree was already being ended"
		}
		if w.seen[k] {
			p := w.peak[k]
			if k == CPUs || k == CPUTime {
				p = math.Round(p*1000) / 1000
			}
			l.Peak = &p
		} else {
			why := "no sample was taken before COMMAND ended"
			switch {
			case w.kernel[k]:
				why = "the kernel held the limit and gave no figure"
			case k == CPUs:
				why = "the run was shorter than the one-second window the share is measured over"
			}
			l.Absent = map[string]string{"peak": why}
		}
		out[k.Key()] = l
	}
	return out
}

// Throttle holds a tree to a CPU share without the kernel's cpu.max: a
// budget that grows by the share for every wall-clock second and shrinks
// by the CPU time the tree used; when it is spent the tree is stopped
// until it is not. Bursts up to a tenth of a second of the share are let
// through.
type Throttle struct {
	CPUs   float64
	budget float64 // seconds of CPU time
	last   Sample
}

// Step takes the tree's CPU time at a sample and returns how long the
// tree must now stay stopped (0: let it run).
func (t *Throttle) Step(s Sample) time.Duration {
	if t.last.At.IsZero() {
		t.last = s
		return 0
	}
	burst := t.CPUs * 0.1
	t.budget += s.At.Sub(t.last.At).Seconds()*t.CPUs - (s.CPU - t.last.CPU).Seconds()
	t.budget = min(t.budget, burst)
	t.last = s
	if t.budget >= 0 {
		return 0
	}
	return time.Duration(-t.budget / t.CPUs * float64(time.Second))
}
