package limit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// osTree is a Tree the enforcer acts on: each sample a step further, and
// a record of what was done to it.
type osTree struct {
	mu      sync.Mutex
	samples []Sample
	n       int // samples taken
	pauses  int
	kills   []string // "memory" or "memory late"
	outcome Outcome
}

func (t *osTree) Sample() Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.samples[min(t.n, len(t.samples)-1)]
	t.n++
	return s
}

func (t *osTree) Pause(d time.Duration, done <-chan struct{}) bool {
	t.mu.Lock()
	t.pauses++
	t.mu.Unlock()
	return true
}

func (t *osTree) Kill(h Hit, late bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := h.Kind.Key()
	if late {
		k += " late"
	}
	t.kills = append(t.kills, k)
}

func (t *osTree) Outcome() Outcome { return t.outcome }

func (t *osTree) taken() (samples, pauses int, kills []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n, t.pauses, append([]string(nil), t.kills...)
}

// haltTree is an osTree that halts (Linux and macOS).
type haltTree struct {
	*osTree
	halts []any
}

func (t *haltTree) Halt(seen any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.halts = append(t.halts, seen)
}

// enforcer is an Enforcer over tree that samples every millisecond, and
// what it logs.
func enforcer(s Set, tree Tree) (*Enforcer, *[]string) {
	var mu sync.Mutex
	var said []string
	e := NewEnforcer(s, tree, func(f string, a ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		mu.Unlock()
	})
	e.Next = func(_, _ Sample, _, _ time.Duration) time.Duration { return time.Millisecond }
	return e, &said
}

// hit is the next limit the main loop hears of.
func hit(t *testing.T, e *Enforcer) Hit {
	t.Helper()
	select {
	case h := <-e.Hits():
		return h
	case <-time.After(2 * time.Second):
		t.Fatal("no limit found exceeded in 2 s")
	}
	return Hit{}
}

// noHit checks that the main loop hears of nothing.
func noHit(t *testing.T, e *Enforcer) {
	t.Helper()
	select {
	case h := <-e.Hits():
		t.Errorf("the main loop was told of %v (%s)", h.Kind.Key(), h.What)
	default:
	}
}

// waitSamples waits until tree has been sampled n times.
func waitSamples(t *testing.T, tree *osTree, n int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if got, _, _ := tree.taken(); got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d samples in 2 s", n)
		}
	}
}

// TestEnforcerFirstHitWins: the first limit found exceeded ends the run.
// A memory limit halts the tree once (with what the finding saw), stops
// the sampling and has the main loop kill it; a CPU time limit found
// after it neither times the run out nor changes the end; a limit found
// again is not acted on again.
func TestEnforcerFirstHitWins(t *testing.T) {
	now := time.Now()
	tree := &haltTree{osTree: &osTree{samples: []Sample{
		{At: now, Memory: 10, CPU: 0},
		{At: now, Memory: 200 << 20, CPU: 3 * time.Second}, // both over: memory is checked first
	}}}
	e, _ := enforcer(Set{Memory: 100 << 20, CPUTime: 2 * time.Second}, tree)
	e.Start()
	defer e.Stop()
	h := hit(t, e)
	if h.Kind != Memory || h.What != "the tree's resident memory reached 200 MiB" {
		t.Fatalf("first hit %v %q, want memory", h.Kind.Key(), h.What)
	}
	if !e.Halted() || len(tree.halts) != 1 {
		t.Errorf("halted %v, %d halts; want halted once", e.Halted(), len(tree.halts))
	}
	time.Sleep(20 * time.Millisecond)
	if n, _, _ := tree.taken(); n != 2 {
		t.Errorf("%d samples of a halted tree, want none after the 2 that found it", n)
	}
	if e.Exceeded(h, func(string) string { t.Error("timed out for memory"); return "" }) {
		t.Error("Exceeded(memory) timed out")
	}
	if _, _, kills := tree.taken(); strings.Join(kills, ",") != "memory" {
		t.Errorf("kills %v, want one for memory", kills)
	}
	// Memory again (a scan's count, the kernel's message): nothing more.
	if e.First(Memory) {
		t.Error("memory found exceeded for the first time twice")
	}
	// CPU time after it: the main loop hears of it, and does nothing.
	if !e.First(CPUTime) {
		t.Fatal("CPU time not first")
	}
	e.Act(Hit{Kind: CPUTime, What: "the tree used 3s of CPU time"})
	if e.Exceeded(hit(t, e), func(string) string { t.Error("timed out after the memory limit ended the run"); return "" }) {
		t.Error("Exceeded(CPU time) timed out after the memory limit")
	}
	end := e.End()
	if end == nil || end.Kind != Memory || end.Message != "memory limit 100 MiB exceeded: the tree's resident memory reached 200 MiB (sampling every 50ms, every 5ms while the tree grows); killed the tree" {
		t.Errorf("end %+v", end)
	}
	rep := e.Watch().Report()
	if c := rep["cpu_time"]; c.Exceeded {
		t.Errorf("cpu_time %+v: exceeded, though the memory limit ended the run first", c)
	}
	if len(tree.halts) != 1 {
		t.Errorf("%d halts, want 1", len(tree.halts))
	}
}

// TestEnforcerCPUTime: a CPU time limit times the run out; what timeOut
// returns is the limit's action, and the timeout's reason says the limit.
func TestEnforcerCPUTime(t *testing.T) {
	tree := &osTree{samples: []Sample{{At: time.Now(), CPU: 2500 * time.Millisecond}}}
	e, _ := enforcer(Set{CPUTime: 2 * time.Second}, tree)
	e.Start()
	defer e.Stop()
	h := hit(t, e)
	var why string
	if !e.Exceeded(h, func(w string) string { why = w; return "sent the timeout signal SIGTERM" }) {
		t.Error("Exceeded(CPU time) did not time out")
	}
	if why != "CPU time limit 2s reached (the tree used 2.5s of CPU time)" {
		t.Errorf("timed out for %q", why)
	}
	if end := e.End(); end == nil || end.Kind != CPUTime || !strings.HasSuffix(end.Message, "(sampling every 50ms); sent the timeout signal SIGTERM") {
		t.Errorf("end %+v", end)
	}
	if _, _, kills := tree.taken(); len(kills) > 0 || e.Halted() {
		t.Errorf("CPU time killed %v, halted %v", kills, e.Halted())
	}
}

// TestEnforcerKernelHeld: a limit the kernel holds is not acted on, however
// far a sample shows the tree past it; what contain samples is. With every
// limit held by the kernel (and no CPU time to poll) nothing is sampled.
func TestEnforcerKernelHeld(t *testing.T) {
	now := time.Now()
	tree := &osTree{samples: []Sample{{At: now, Memory: 500 << 20, Procs: 3}, {At: now, Memory: 500 << 20, Procs: 9}}}
	e, _ := enforcer(Set{Memory: 100 << 20, Pids: 5}, tree)
	e.Watch().Enforce(Memory, "cgroup memory.max", true)
	e.Start()
	defer e.Stop()
	if h := hit(t, e); h.Kind != Pids || h.What != "9 processes were alive" {
		t.Errorf("hit %v %q, want pids", h.Kind.Key(), h.What)
	}
	noHit(t, e)

	held := &osTree{samples: []Sample{{At: now, Memory: 500 << 20, Procs: 9}}}
	e, _ = enforcer(Set{Memory: 100 << 20, Pids: 5}, held)
	e.Watch().Enforce(Memory, "cgroup memory.max", true)
	e.Watch().Enforce(Pids, "cgroup pids.max", true)
	e.Start()
	time.Sleep(10 * time.Millisecond)
	e.Stop()
	if n, _, _ := held.taken(); n > 0 {
		t.Errorf("%d samples with every limit held by the kernel", n)
	}
	noHit(t, e)
	// A scan's count past a limit the kernel holds is only a figure.
	if e.Watch().Count(50) {
		t.Error("a count past the kernel's process limit is over")
	}
}

// TestEnforcerThrottle: --cpus without the kernel's hold pauses a tree
// that used its share, until COMMAND has ended; held by the kernel, it
// pauses nothing.
func TestEnforcerThrottle(t *testing.T) {
	now := time.Now()
	var samples []Sample // ten CPUs' worth, held to half of one
	for i := range 50 {
		samples = append(samples, Sample{At: now.Add(time.Duration(i) * 100 * time.Millisecond), CPU: time.Duration(i) * time.Second})
	}
	tree := &osTree{samples: samples}
	e, _ := enforcer(Set{CPUs: 0.5}, tree)
	if !e.Throttling() {
		t.Fatal("not throttling --cpus that the kernel does not hold")
	}
	e.Start()
	waitSamples(t, tree, 6)
	e.CommandEnded()
	_, before, _ := tree.taken()
	if before == 0 {
		t.Error("a tree at ten CPUs, held to half of one, was never paused")
	}
	// At most one pause under way as COMMAND ended.
	n, _, _ := tree.taken()
	waitSamples(t, tree, n+5)
	e.Stop()
	if _, after, _ := tree.taken(); after > before+1 {
		t.Errorf("paused %d times after COMMAND ended", after-before)
	}
	if rep := e.Watch().Report()["cpus"]; !rep.Exceeded || rep.Action != "throttled" {
		t.Errorf("cpus %+v", rep)
	}

	held := &osTree{samples: samples}
	e, _ = enforcer(Set{CPUs: 0.5, CPUTime: time.Hour}, held) // CPU time: still sampled
	e.Watch().Enforce(CPUs, "cgroup cpu.max", true)
	if e.Throttling() {
		t.Error("throttling --cpus that the kernel holds")
	}
	e.Start()
	waitSamples(t, held, 6)
	e.Stop()
	if _, pauses, _ := held.taken(); pauses > 0 {
		t.Errorf("paused %d times with cpu.max holding the share", pauses)
	}
}

// TestEnforcerLate: once COMMAND has ended, what the main loop did not
// act on is acted on at once, a memory or process limit killing what is
// left (late), once; a CPU time limit is nothing.
func TestEnforcerLate(t *testing.T) {
	tree := &osTree{samples: []Sample{{}}}
	e, _ := enforcer(Set{Memory: 100 << 20, Pids: 5, CPUTime: time.Second}, tree)
	e.First(CPUTime)
	e.Act(Hit{Kind: CPUTime, What: "cpu"}) // unread by the main loop
	e.First(Pids)
	e.Act(Hit{Kind: Pids, What: "9 processes were alive"})
	e.CommandEnded()
	if _, _, kills := tree.taken(); strings.Join(kills, ",") != "pids late" {
		t.Errorf("kills %v, want pids late", kills)
	}
	if end := e.End(); end == nil || end.Kind != Pids || !strings.HasSuffix(end.Message, "; killed the tree") {
		t.Errorf("end %+v", end)
	}
	// A memory limit after it: the tree is being killed already.
	e.First(Memory)
	e.Act(Hit{Kind: Memory, What: "more"})
	if _, _, kills := tree.taken(); len(kills) != 1 {
		t.Errorf("kills %v, want only the first limit's", kills)
	}
	if end := e.End(); end.Kind != Pids {
		t.Errorf("end %+v, want the first (pids)", end)
	}
	noHit(t, e)
	if e.Halted() {
		t.Error("a tree that cannot halt is halted")
	}
}

// TestEnforcerKernelOutcome: what the kernel did of the limits it held is
// accounted for: its peaks, an OOM kill for the tree's own limit ending
// the run (unless a limit already did), one for a limit above it only
// said, refused starts and throttling as the limits' actions; nothing of
// a limit contain held itself.
func TestEnforcerKernelOutcome(t *testing.T) {
	set := Set{Memory: 100 << 20, Pids: 10, CPUs: 1}
	kernel := func(e *Enforcer) {
		e.Watch().Enforce(Memory, "cgroup memory.max", true)
		e.Watch().Enforce(Pids, "cgroup pids.max", true)
		e.Watch().Enforce(CPUs, "cgroup cpu.max", true)
	}

	tree := &osTree{outcome: Outcome{MemoryPeak: 99 << 20, PidsPeak: 10, OOMKills: 2,
		Refused: 3, RefusedWhat: "fork(s) (pids.events max)", Throttled: 4, ThrottledTime: 1500 * time.Millisecond}}
	e, said := enforcer(set, tree)
	kernel(e)
	e.KernelOutcome()
	if end := e.End(); end == nil || end.Kind != Memory || end.Message != "memory limit 100 MiB exceeded: the kernel killed 2 process(es) of the tree for it (cgroup memory.max); the kernel's OOM killer ended the tree" {
		t.Errorf("end %+v", end)
	}
	rep := e.Watch().Report()
	if m := rep["memory"]; m.Peak == nil || *m.Peak != 99<<20 || !m.Exceeded {
		t.Errorf("memory %+v", m)
	}
	if p := rep["pids"]; p.Peak == nil || *p.Peak != 10 || p.Action != "refused 3 fork(s) (pids.events max)" {
		t.Errorf("pids %+v", p)
	}
	if c := rep["cpus"]; c.Action != "throttled 4 time(s), 1.5s in all" {
		t.Errorf("cpus %+v", c)
	}
	if len(*said) != 1 || (*said)[0] != "process limit 10 exceeded: the tree tried to start more processes (cgroup pids.max); refused 3 fork(s) (pids.events max)" {
		t.Errorf("said %q", *said)
	}

	// An OOM kill for a limit above the tree: said and noted, not the end.
	tree = &osTree{outcome: Outcome{OtherOOMKills: 1}}
	e, said = enforcer(set, tree)
	kernel(e)
	e.KernelOutcome()
	if e.End() != nil {
		t.Errorf("end %+v for another limit's OOM kill", e.End())
	}
	if m := e.Watch().Report()["memory"]; m.Exceeded || !strings.Contains(m.Note, "1 OOM kill(s) inside the tree came from a limit above it") {
		t.Errorf("memory %+v", m)
	}
	if len(*said) != 1 || !strings.Contains((*said)[0], "for a limit that is not contain's") {
		t.Errorf("said %q", *said)
	}

	// A limit already ended the run: the OOM kill does not take its place.
	tree = &osTree{samples: []Sample{{}}, outcome: Outcome{OOMKills: 1}}
	e, _ = enforcer(Set{Memory: 100 << 20, CPUTime: time.Second}, tree)
	e.Watch().Enforce(Memory, "cgroup memory.max", true)
	e.First(CPUTime)
	e.Act(Hit{Kind: CPUTime, What: "cpu"})
	e.Exceeded(hit(t, e), func(string) string { return "sent the timeout signal SIGTERM" })
	e.KernelOutcome()
	if end := e.End(); end.Kind != CPUTime {
		t.Errorf("end %+v, want CPU time's", end)
	}

	// Nothing of the limits contain held itself: the kernel's counters
	// there are another's.
	tree = &osTree{outcome: tree.outcome}
	tree.outcome = Outcome{OOMKills: 5, Refused: 2, RefusedWhat: "process start(s)", Throttled: 9, MemoryPeak: 1 << 30}
	e, said = enforcer(set, tree)
	e.KernelOutcome()
	if e.End() != nil || len(*said) > 0 {
		t.Errorf("end %+v, said %q, of limits contain held", e.End(), *said)
	}
	for k, l := range e.Watch().Report() {
		if l.Exceeded || l.Peak != nil {
			t.Errorf("%s %+v, of a limit contain held", k, l)
		}
	}
}

// TestEnforcerHalt: only a tree that halts is halted, once, with what the
// finding saw of it.
func TestEnforcerHalt(t *testing.T) {
	tree := &haltTree{osTree: &osTree{samples: []Sample{{}}}}
	e, _ := enforcer(Set{Memory: 100 << 20, Pids: 5}, tree)
	seen := []int{1, 2, 3}
	e.First(Pids)
	e.Act(Hit{Kind: Pids, What: "4 processes were alive", Seen: seen})
	e.First(Memory)
	e.Act(Hit{Kind: Memory, What: "m"})
	if len(tree.halts) != 1 || fmt.Sprint(tree.halts[0]) != fmt.Sprint(seen) {
		t.Errorf("halts %v, want one with what the count saw", tree.halts)
	}
	if !e.Halted() {
		t.Error("not halted")
	}
	if h := hit(t, e); h.Kind != Pids {
		t.Errorf("first hit %v, want pids", h.Kind.Key())
	}
}

// TestEnforcerRefuse: --strict-limits refuses a limit the kernel does not
// hold, saying why and what would hold it.
func TestEnforcerRefuse(t *testing.T) {
	why := func(Kind) string { return "no cgroup for this run" }
	e, _ := enforcer(Set{Memory: 100 << 20, Pids: 5, Strict: true}, &osTree{})
	e.Watch().Enforce(Memory, "cgroup memory.max", true)
	err := e.Refuse(why)
	if err == nil || err.Error() != "refusing to run: --pids 5 cannot be enforced by the kernel here (no cgroup for this run), and --strict-limits asks that it be; it would be held by sampling every 50ms, every 5ms while the tree grows" {
		t.Errorf("Refuse: %v", err)
	}
	e.Watch().Enforce(Pids, "cgroup pids.max", true)
	if err := e.Refuse(why); err != nil {
		t.Errorf("Refuse with every limit held: %v", err)
	}
	e, _ = enforcer(Set{Memory: 100 << 20}, &osTree{})
	if err := e.Refuse(why); err != nil {
		t.Errorf("Refuse without --strict-limits: %v", err)
	}
}
