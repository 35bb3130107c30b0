package limit

import (
	"sync"
	"testing"
	"time"
)

// fakeTree is a tree the sampler samples: each sample a step further.
type fakeTree struct {
	mu      sync.Mutex
	samples []Sample
	n       int
	over    []Kind
	pauses  []time.Duration
	costs   []time.Duration
	clock   time.Duration
}

func (f *fakeTree) sample() Sample {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.samples[min(f.n, len(f.samples)-1)]
	f.n++
	f.clock += 3 * time.Millisecond // what the sample cost
	return s
}

func (f *fakeTree) sampler(w *Watch) *Sampler {
	return &Sampler{Watch: w, Sample: f.sample,
		Over: func(k Kind, _ Sample) { f.mu.Lock(); f.over = append(f.over, k); f.mu.Unlock() },
		Pause: func(d time.Duration, _ <-chan struct{}) bool {
			f.mu.Lock()
			f.pauses = append(f.pauses, d)
			f.clock += d // a pause must not count as the sample's cost
			f.mu.Unlock()
			return true
		},
		Clock: func() time.Duration { f.mu.Lock(); defer f.mu.Unlock(); return f.clock },
		Next: func(_, _ Sample, _, cost time.Duration) time.Duration {
			f.mu.Lock()
			f.costs = append(f.costs, cost)
			f.mu.Unlock()
			return time.Millisecond
		}}
}

// runFor runs sp until it has taken n samples (or ended), then stops it.
func runFor(t *testing.T, f *fakeTree, sp *Sampler, n int) {
	t.Helper()
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() { sp.Run(done); close(ended) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		taken := f.n
		f.mu.Unlock()
		if taken >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples taken in 5 s, want %d", taken, n)
		}
	}
	close(done)
	<-ended
}

// TestSamplerOver: every sample over a limit is told (acting once is the
// caller's); a tree being killed ends the sampling, which then waits for
// done.
func TestSamplerOver(t *testing.T) {
	now := time.Now()
	f := &fakeTree{samples: []Sample{{At: now, Memory: 10}, {At: now, Memory: 200}}}
	w := NewWatch(Set{Memory: 100})
	sp := f.sampler(w)
	runFor(t, f, sp, 4)
	if len(f.over) < 2 || f.over[0] != Memory {
		t.Errorf("told of %v, want memory at each sample over it", f.over)
	}
	g := &fakeTree{samples: []Sample{{At: now, Memory: 200}}}
	sp = g.sampler(NewWatch(Set{Memory: 100}))
	sp.Ended = func() bool { return true }
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() { sp.Run(done); close(ended) }()
	time.Sleep(20 * time.Millisecond)
	g.mu.Lock()
	if g.n != 1 {
		t.Errorf("%d samples taken of a tree being killed, want 1", g.n)
	}
	g.mu.Unlock()
	select {
	case <-ended:
		t.Fatal("Run returned before done")
	default:
	}
	close(done)
	<-ended
}

// TestSamplerThrottle: a tree past its CPU share is paused while the
// throttle holds, never after; what the pause takes is not the sample's
// cost.
func TestSamplerThrottle(t *testing.T) {
	now := time.Now()
	// A second of CPU time per 100 ms of wall clock: ten CPUs' worth,
	// held to half of one.
	var samples []Sample
	for i := range 20 {
		samples = append(samples, Sample{At: now.Add(time.Duration(i) * 100 * time.Millisecond), CPU: time.Duration(i) * time.Second})
	}
	for _, holds := range []bool{true, false} {
		f := &fakeTree{samples: samples}
		sp := f.sampler(NewWatch(Set{CPUs: 0.5}))
		sp.Throttle = &Throttle{CPUs: 0.5}
		sp.Throttles = func() bool { return holds }
		runFor(t, f, sp, 6)
		if holds && len(f.pauses) == 0 {
			t.Error("a tree at ten CPUs, held to half of one, was never paused")
		}
		if !holds && len(f.pauses) > 0 {
			t.Errorf("paused %v while the throttle does not hold", f.pauses)
		}
		for _, c := range f.costs {
			if c != 3*time.Millisecond {
				t.Errorf("a sample cost %v by the clock, want 3ms (the pause is not its cost)", c)
			}
		}
	}
}
