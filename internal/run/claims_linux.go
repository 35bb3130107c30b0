package run

import (
	"fmt"
	"os"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
)

// The session's side of the claims of package daemon: a run with
// --allow-daemons listens on its claim socket, and spares the daemon a
// contain run -d among its members claims.

// claimDaemon tells the session contain run -d runs in of the daemon it
// started (daemon.Claim).
func claimDaemon(pid int, log Logger) { daemon.Claim(pid, log) }

// claims is the claim socket, bound before COMMAND starts; err, why it
// could not be.
type claims struct {
	ln  *os.File
	err error
}

// bind binds the claim socket before COMMAND starts (daemon.BindClaims).
func (s *sparing) bind() { s.claims.ln, s.claims.err = daemon.BindClaims(s.r.self) }

// listen starts taking claims on the socket bind bound; the returned
// function stops it. A socket that cannot be had is said on stderr, with
// or without -v: the daemons are then judged by their environment alone.
func (s *sparing) listen() (stop func()) {
	if s.claims.ln == nil && s.claims.err == nil {
		s.bind()
	}
	err := s.claims.err
	if err == nil {
		var srv *daemon.ClaimServer
		if srv, err = daemon.ServeClaims(s.claims.ln, s.r.log, s.grant); err == nil {
			return srv.Stop
		}
	}
	text.Fprintf(nosigpipe.Stderr(), "contain: cannot listen for contain run -d's daemons on %s: %v (they are judged by their environment alone)\n", daemon.SocketName(s.r.self), err)
	return func() {}
}

// grant spares daemon e, claimed by contain run -d (from) and checked by
// package daemon, when from is a member of the session.
func (s *sparing) grant(from int, e proc.Entry) error {
	r := s.r
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
	s.spare([]proc.Entry{e})
	return nil
}
