package limit

import "time"

// Sampler is the sampling of a tree that contain does itself, the same on
// every OS: each sample checked against the limits contain holds (Over
// hears of every limit a sample finds exceeded; acting once is the
// caller's), and the --cpus throttle, while it holds, pausing the tree
// whenever it has used its share. The OS supplies the samples, the pause
// and the pace.
type Sampler struct {
	Watch    *Watch
	Throttle *Throttle // nil: no --cpus, or the kernel holds it
	Sample   func() Sample
	Over     func(k Kind, s Sample)
	// Ended reports whether there is nothing more to sample (the tree is
	// being killed); Run then waits for done. nil: never.
	Ended func() bool
	// Throttles reports whether the throttle holds now (not once COMMAND
	// has ended). nil: always.
	Throttles func() bool
	// Pause stops the tree for d, or until done; false: done came first.
	Pause func(d time.Duration, done <-chan struct{}) bool
	// Clock measures what a sample cost (contain's CPU time, or the wall
	// clock), and Next is the wait before the next sample, from the last
	// two samples, the last wait and that cost.
	Clock func() time.Duration
	Next  func(prev, s Sample, last, cost time.Duration) time.Duration
}

// Run samples until done.
func (sp *Sampler) Run(done <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	var prev Sample
	var wait time.Duration
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		began := sp.Clock()
		s := sp.Sample()
		cost := sp.Clock() - began // before any pause: the sample's own
		if k, over := sp.Watch.Check(s); over {
			sp.Over(k, s)
		}
		if sp.Ended != nil && sp.Ended() {
			<-done // the tree is being killed: nothing more to hold
			return
		}
		if sp.Throttle != nil && (sp.Throttles == nil || sp.Throttles()) {
			if d := sp.Throttle.Step(s); d > 0 {
				sp.Watch.Hit(CPUs, "throttled")
				if !sp.Pause(d, done) {
					return
				}
			}
		}
		wait = sp.Next(prev, s, wait, cost)
		prev = s
		t.Reset(wait)
	}
}
