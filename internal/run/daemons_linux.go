package run

import (
	"slices"

	"github.com/contain-cli/contain/internal/proc"
)

// releaseFromShim tells the shim that p left the session: it no longer
// waits for it, nor ends it should contain die.
func (r *runner) releaseFromShim(p proc.Entry) {
	if err := r.shim.Spare(p.PID, p.Start); err != nil {
		r.log("cannot tell the shim to spare %d (%s): %v", p.PID, p.Comm, err)
	}
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
	return proc.OnlySpared(r.self, spared, r.guard.PID())
}
