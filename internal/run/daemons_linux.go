package run

import "github.com/contain-cli/contain/internal/proc"

// releaseFromShim tells the shim that p left the session: it no longer
// waits for it, nor ends it should contain die.
func (sys *linuxOS) releaseFromShim(p proc.Entry) {
	if err := sys.r.shim.Spare(p.PID, p.Start); err != nil {
		sys.r.log("cannot tell the shim to spare %d (%s): %v", p.PID, p.Comm, err)
	}
}

// onlySpared reports whether contain's only children, the guard aside,
// are daemons it spared: contain, the subreaper, is the parent of those
// whose parents have ended.
func (s *sparing) onlySpared() bool {
	return proc.OnlySpared(s.r.self, s.spared(), s.r.guard.PID())
}
