package run

import (
	"fmt"
	"slices"

	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
)

// releaseFromShim tells the shim that p left the session: it no longer
// waits for it, nor ends it should contain die.
func (r *runner) releaseFromShim(p proc.Entry) {
	if r.shim == nil {
		return
	}
	if _, err := fmt.Fprintf(nosigpipe.Writer(r.shim.orders), "%s %d %d\n", shimRelease, p.PID, p.Start); err != nil {
		r.log("cannot tell the shim to spare %d (%s): %v", p.PID, p.Comm, err)
	}
}

// onlySpared reports whether every live child of process self is among
// spared, and there is at least one: a subreaper (contain, the shim) then
// waits for nothing of the session. A child that has ended but is not
// yet waited for counts as left: the next wait takes it.
func onlySpared(self int, spared []proc.ID, skip ...int) bool {
	if len(spared) == 0 {
		return false
	}
	procs, err := proc.Scan()
	if err != nil {
		return false
	}
	is := make(map[proc.ID]bool, len(spared))
	for _, id := range spared {
		is[id] = true
	}
	n := 0
	for _, p := range procs {
		if p.PPID != self || slices.Contains(skip, p.PID) {
			continue
		}
		if p.Zombie || !is[proc.ID{PID: p.PID, Start: p.Start}] {
			return false
		}
		n++
	}
	return n > 0
}

// onlySpared reports whether contain's only children, the guard aside,
// are daemons it spared (--allow-daemons).
func (r *runner) onlySpared() bool {
	if !r.o.AllowDaemons {
		return false
	}
	r.trackMu.Lock()
	spared := slices.Clone(r.spared)
	r.trackMu.Unlock()
	var skip []int
	if r.guard != nil {
		skip = append(skip, r.guard.PID())
	}
	return onlySpared(r.self, spared, skip...)
}
