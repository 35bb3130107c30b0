package limit

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contain-cli/contain/report"
)

// Tree is a run's whole tree as its OS holds it (a cgroup, or the
// tracker's scans, on Linux and macOS; a job object on Windows): the
// verbs the Enforcer asks of it. The OS supplies only these; what is
// decided of them (which limit is hit first, what is done of it, what the
// kernel's counters mean) is the Enforcer's, the same on every OS.
type Tree interface {
	// Sample measures the whole tree now.
	Sample() Sample
	// Pause stops the tree for d, or until done, for the --cpus throttle,
	// then lets it go on, unless it was halted meanwhile
	// (Enforcer.Halted); false: done came first.
	Pause(d time.Duration, done <-chan struct{}) bool
	// Kill ends the tree for a memory or process limit exceeded: told by
	// the main loop while COMMAND runs (late: false), or at once after
	// COMMAND has ended, while its leftovers are ended (late: true).
	Kill(h Hit, late bool)
	// Outcome is what the kernel did of the limits it held, read once
	// COMMAND has ended.
	Outcome() Outcome
}

// Halter is a Tree that is stopped at once when a memory or process
// limit is found exceeded, for the kill that follows: a tree that forks
// as fast as it is killed (a fork bomb) cannot outrun it then. It stays
// stopped until it is killed, and is sampled no more (Linux and macOS:
// the cgroup frozen, or SIGSTOP to each member; a job object is
// terminated whole, and Windows halts nothing).
type Halter interface {
	// Halt stops the tree; seen is what the finding saw of it (Hit.Seen).
	Halt(seen any)
}

// Attributor is a Tree that can say what held a memory or process limit
// at the moment it was found exceeded, once the tree is halted (so that
// what it reads stands still): the processes with the most resident
// memory, or those that had started the most of the tree's processes.
type Attributor interface {
	// HeldBy reads the tree for limit k; seen is Hit.Seen.
	HeldBy(k Kind, seen any) []report.Holder
}

// heldMost is how many processes a limit's line and report name.
const heldMost = 3

// Top keeps the n holders that held most: one the OS names for how it
// held the limit (How: the job refused it an allocation) first, then by
// resident memory, or by children started, the larger first (ties: the
// lower PID), each with a tenth of the first's share at least.
func Top(hs []report.Holder, n int) []report.Holder {
	key := func(h report.Holder) uint64 {
		if h.RSSBytes != nil {
			return *h.RSSBytes
		}
		return uint64(h.Children)
	}
	slices.SortStableFunc(hs, func(a, b report.Holder) int {
		if a.How != "" && b.How == "" {
			return -1
		}
		if b.How != "" && a.How == "" {
			return 1
		}
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.PID, b.PID)
	})
	hs = slices.DeleteFunc(hs, func(h report.Holder) bool { return key(h) == 0 && h.How == "" })
	// Only what held a share worth naming: a tenth of the first's at
	// least (a 100 MiB hog, not the 1.5 MiB shell beside it).
	if len(hs) > 1 {
		first := key(hs[0])
		hs = append(hs[:1], slices.DeleteFunc(hs[1:], func(h report.Holder) bool { return h.How == "" && key(h)*10 < first })...)
	}
	return hs[:min(n, len(hs))]
}

// Hit is a limit found exceeded: what the main loop is told.
type Hit struct {
	Kind Kind
	What string // what showed it: "the tree's resident memory reached 112 MiB"
	// Seen is what the finding saw of the tree, the OS's own, for Halt
	// (the members a scan found); nil: nothing.
	Seen any
}

// End is the limit that ended the run, and the line that says so.
type End struct {
	Kind    Kind
	Message string // "memory limit 100 MiB exceeded: ...; killed the tree"
}

// Outcome is what the kernel did of the limits it held (Linux: the
// cgroup's memory.events, pids.events, cpu.stat; Windows: the job's
// messages and accounting). A zero field: nothing known, or nothing done.
type Outcome struct {
	MemoryPeak uint64 // the tree's peak memory, as the kernel counts it
	PidsPeak   uint64 // the most processes alive at once
	// OOMKills are the processes the kernel killed for the tree's own
	// memory limit: the limit ended the run. OtherOOMKills are those it
	// killed inside the tree for a limit above it (an ancestor cgroup's,
	// the machine's): said, never counted as the limit's.
	OOMKills, OtherOOMKills uint64
	// Refused is the process starts the kernel refused for the process
	// limit, and RefusedWhat what it calls them ("fork(s) (pids.events
	// max)", "process start(s)").
	Refused     uint64
	RefusedWhat string
	// Throttled is the periods in which the kernel held the tree to its
	// CPU share, for ThrottledTime in all.
	Throttled     uint64
	ThrottledTime time.Duration
	// OOMVictims are the processes of the tree the kernel's OOM killer
	// ended, where the OS can tell (Linux: the kernel's log, for root;
	// else the members contain reaped that died of SIGKILL it had not
	// sent).
	OOMVictims []report.Holder
}

// Enforcer holds a run's limits over its tree, the same on every OS: it
// samples the tree when a limit needs it (Sampler), acts on the first
// finding of each limit (Act: a memory or process limit halts the tree
// and has it killed, a CPU time limit times the run out, through the main
// loop while COMMAND runs), pauses the tree for the --cpus throttle
// where the kernel does not hold the share, and reads what the kernel did
// of the limits it held (KernelOutcome). Only one limit ends the run: the
// first.
type Enforcer struct {
	// Clock measures what a sample costs contain (nil: the wall clock),
	// and Next is the wait before the next sample, from the last two
	// samples, the last wait and that cost (nil: the Watch's Pace, and at
	// least its share of the cost). Both are set before Start.
	Clock func() time.Duration
	Next  func(prev, s Sample, last, cost time.Duration) time.Duration

	w    *Watch
	tree Tree
	log  func(format string, a ...any)
	hits chan Hit // to the main loop: one per kind at most

	halted  atomic.Bool // the tree is stopped for its kill
	closing atomic.Bool // COMMAND has ended: no main loop reads hits

	mu     sync.Mutex
	found  [nKinds]bool // a limit already found exceeded
	ending bool         // a limit ends the run (end, once known)
	end    *End

	last          Sample // the sampler's: the tree's CPU time never goes back
	done, stopped chan struct{}
}

// NewEnforcer starts the enforcement of limits s over tree, every limit
// sampled until the OS says the kernel holds it (Watch().Enforce); log
// takes what it says.
func NewEnforcer(s Set, tree Tree, log func(format string, a ...any)) *Enforcer {
	return &Enforcer{w: NewWatch(s), tree: tree, log: log, hits: make(chan Hit, nKinds)}
}

// Watch is the account of the limits: how each is held, what was seen.
func (e *Enforcer) Watch() *Watch { return e.w }

// Hits is the main loop's channel of the limits found exceeded.
func (e *Enforcer) Hits() <-chan Hit { return e.hits }

// Throttling reports whether contain holds the CPU share itself, by
// pausing the tree: --cpus, where the kernel does not hold it.
func (e *Enforcer) Throttling() bool { return e.w.Set.CPUs > 0 && !e.w.Kernel(CPUs) }

// Halted reports whether the tree is stopped for its kill.
func (e *Enforcer) Halted() bool { return e.halted.Load() }

// Closing reports whether COMMAND has ended (CommandEnded).
func (e *Enforcer) Closing() bool { return e.closing.Load() }

// Start samples the tree, when a limit needs it, until Stop: each sample
// checked, the CPU share held.
func (e *Enforcer) Start() {
	if !e.w.Sampling() && !e.Throttling() {
		return
	}
	sp := &Sampler{Watch: e.w, Sample: e.sample,
		Over: func(k Kind, s Sample) {
			if e.First(k) {
				e.Act(Hit{Kind: k, What: Said(k, s)})
			}
		},
		Ended:     e.halted.Load,
		Throttles: func() bool { return !e.closing.Load() },
		Pause:     e.tree.Pause,
		Clock:     e.Clock,
		Next:      e.Next,
	}
	if e.Throttling() {
		sp.Throttle = &Throttle{CPUs: e.w.Set.CPUs}
	}
	if sp.Clock == nil {
		began := time.Now()
		sp.Clock = func() time.Duration { return time.Since(began) }
	}
	if sp.Next == nil {
		sp.Next = func(prev, s Sample, last, cost time.Duration) time.Duration {
			next, share := e.w.Pace(prev, s, last)
			return max(next, time.Duration(share)*cost)
		}
	}
	e.done, e.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(e.stopped)
		sp.Run(e.done)
	}()
}

// Stop ends the sampling, if any.
func (e *Enforcer) Stop() {
	if e.done != nil {
		close(e.done)
		<-e.stopped
		e.done = nil
	}
}

// sample is the tree's sample, its CPU time never going back.
func (e *Enforcer) sample() Sample {
	s := e.tree.Sample()
	s.CPU = max(s.CPU, e.last.CPU)
	e.last = s
	return s
}

// First reports whether limit k is found exceeded for the first time:
// only the first finding of each limit is acted on (Act).
func (e *Enforcer) First(k Kind) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.found[k] {
		return false
	}
	e.found[k] = true
	return true
}

// Act acts on a limit found exceeded (a sample's, a scan's count, the
// kernel's message): a memory or process limit halts the tree, then has
// it killed, by the main loop while COMMAND runs, else at once; a CPU
// time limit goes to the main loop, which times the run out, and is
// nothing once COMMAND has ended.
func (e *Enforcer) Act(h Hit) {
	if h.Kind == CPUTime {
		if !e.closing.Load() {
			e.hits <- h
		}
		return
	}
	if t, ok := e.tree.(Halter); ok && e.halted.CompareAndSwap(false, true) {
		t.Halt(h.Seen)
	}
	// What held it, read while the tree stands still (halted), before
	// the line that says so is made.
	if a, ok := e.tree.(Attributor); ok {
		e.w.Held(h.Kind, Top(a.HeldBy(h.Kind, h.Seen), heldMost))
	}
	if e.closing.Load() {
		e.late(h)
		return
	}
	e.hits <- h
	// COMMAND may have ended meanwhile, with no main loop left to read it.
	if e.closing.Load() {
		e.CommandEnded()
	}
}

// Exceeded is the main loop's act on a limit found exceeded, unless a
// limit already ends the run: memory or processes kill the tree; CPU time
// times the run out, through timeOut, which returns what is recorded as
// the limit's action. It reports whether it timed the run out.
func (e *Enforcer) Exceeded(h Hit, timeOut func(why string) (action string)) (timedOut bool) {
	if !e.claim() {
		return false
	}
	if h.Kind == CPUTime {
		action := timeOut(fmt.Sprintf("%s %s reached (%s)", h.Kind.Words(), e.w.Set.Show(h.Kind), h.What))
		e.record(h.Kind, action, h.What)
		return true
	}
	e.record(h.Kind, "killed the tree", h.What)
	e.tree.Kill(h, false)
	return false
}

// CommandEnded switches to the close: what the main loop was told of and
// did not act on is acted on now, and every later finding at once.
func (e *Enforcer) CommandEnded() {
	e.closing.Store(true)
	for {
		select {
		case h := <-e.hits:
			e.late(h)
		default:
			return
		}
	}
}

// late kills the tree for a memory or process limit exceeded after
// COMMAND ended, unless a limit already ended the run; a CPU time limit
// no longer times anything out.
func (e *Enforcer) late(h Hit) {
	if h.Kind == CPUTime || !e.claim() {
		return
	}
	e.record(h.Kind, "killed the tree", h.What)
	e.tree.Kill(h, true)
}

// claim takes the run's end for a limit, unless one already has it.
func (e *Enforcer) claim() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ending {
		return false
	}
	e.ending = true
	return true
}

// record records that limit k ended the run, by action, the tree seen
// doing what.
func (e *Enforcer) record(k Kind, action, what string) {
	e.w.Hit(k, action)
	end := &End{Kind: k, Message: e.w.Message(k, what)}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.end = end
}

// End is the limit that ended the run; nil: none did.
func (e *Enforcer) End() *End {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.end
}

// KernelOutcome reads, once COMMAND has ended, what the kernel did of the
// limits it held (Tree.Outcome) and accounts for it: its peaks; an OOM
// kill for the tree's memory limit ends the run as the limit (unless one
// already did), one for a limit above it is only said; refused process
// starts and throttling are the limits' actions.
func (e *Enforcer) KernelOutcome() {
	o := e.tree.Outcome()
	w := e.w
	if w.Kernel(Memory) {
		if o.MemoryPeak > 0 {
			w.Observe(Memory, float64(o.MemoryPeak))
		}
		switch {
		case o.OOMKills > 0:
			// Said once, by the command (the End), -v or not.
			if e.claim() {
				for i := range o.OOMVictims {
					o.OOMVictims[i].How = "ended by the kernel's OOM killer"
				}
				w.Held(Memory, o.OOMVictims)
				e.record(Memory, "the kernel's OOM killer ended the tree", fmt.Sprintf("the kernel killed %d process(es) of the tree for it", o.OOMKills))
			}
		case o.OtherOOMKills > 0:
			e.log("the kernel's OOM killer ended %d process(es) of the tree for a limit that is not contain's (an ancestor cgroup's, or the machine's): memory.events counts them, memory.events.local does not", o.OtherOOMKills)
			w.Note(Memory, fmt.Sprintf("%d OOM kill(s) inside the tree came from a limit above it, not --memory", o.OtherOOMKills))
		}
	}
	if w.Kernel(Pids) {
		if o.PidsPeak > 0 {
			w.Observe(Pids, float64(o.PidsPeak))
		}
		if o.Refused > 0 {
			// Who had started the most, as the tree stands now: the
			// kernel says how many starts it refused, not whose.
			if a, ok := e.tree.(Attributor); ok {
				w.Held(Pids, Top(a.HeldBy(Pids, nil), heldMost))
			}
			w.Hit(Pids, fmt.Sprintf("refused %d %s", o.Refused, o.RefusedWhat))
			e.log("%s", w.Message(Pids, "the tree tried to start more processes"))
		}
	}
	if w.Kernel(CPUs) && o.Throttled > 0 {
		w.Hit(CPUs, fmt.Sprintf("throttled %d time(s), %v in all", o.Throttled, o.ThrottledTime.Round(time.Millisecond)))
	}
}

// Refuse is the refusal --strict-limits asks for when a limit asked for
// is not held by the kernel (why says why not); nil: nothing to refuse.
func (e *Enforcer) Refuse(why func(Kind) string) error {
	if !e.w.Set.Strict {
		return nil
	}
	for _, k := range e.w.Set.Asked() {
		if !e.w.Kernel(k) {
			return fmt.Errorf("refusing to run: %s %s cannot be enforced by the kernel here (%s), and --strict-limits asks that it be; it would be held by %s", k.Option(), e.w.Set.Show(k), why(k), e.w.By(k))
		}
	}
	return nil
}
