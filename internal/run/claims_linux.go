package run

import (
	"fmt"

	"github.com/contain-cli/contain/internal/claim"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
)

// claimDaemon tells the session contain run -d runs in of the daemon it
// started (package claim).
func claimDaemon(pid int, log Logger) { claim.Daemon(pid, log) }

// bindClaims binds the claim socket before COMMAND starts (claim.Bind).
func (r *runner) bindClaims() { r.claimLn, r.claimErr = claim.Bind(r.self) }

// listenClaims starts taking claims on the socket bindClaims bound; the
// returned function stops it. A socket that cannot be had is said on
// stderr, with or without -v: the daemons are then judged by their
// environment alone.
func (r *runner) listenClaims() (stop func()) {
	if r.claimLn == nil && r.claimErr == nil {
		r.bindClaims()
	}
	err := r.claimErr
	if err == nil {
		var s *claim.Server
		if s, err = claim.Serve(r.claimLn, r.log, r.grantClaim); err == nil {
			return s.Stop
		}
	}
	text.Fprintf(nosigpipe.Stderr(), "contain: cannot listen for contain run -d's daemons on %s: %v (they are judged by their environment alone)\n", claim.Name(r.self), err)
	return func() {}
}

// grantClaim spares daemon e, claimed by contain run -d (from) and checked
// by package claim, when from is a member of the session.
func (r *runner) grantClaim(from int, e proc.Entry) error {
	r.scanAll() // both are seen, the claimed one judged if it can be
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	if !r.track.IsMember(proc.ID{PID: from, Start: proc.StartOf(from)}) {
		return fmt.Errorf("%d is no member of session %s", from, r.o.Tag)
	}
	id := proc.ID{PID: e.PID, Start: e.Start}
	if r.track.Released(id) {
		return nil // seen with the mark already
	}
	// A scan may have judged it already, by an environment it had written
	// its title over: the word of contain run -d, its parent, which
	// started it marked a moment ago, is better.
	r.track.ReleaseNow(e)
	r.spared = append(r.spared, id)
	r.spare([]proc.Entry{e})
	return nil
}
