//go:build linux || darwin

package run

import (
	"errors"
	"slices"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/report"
)

// With --allow-daemons, a process that carries RUNNING_PROCESS_IS_DAEMON=1
// when contain first sees it leaves the session, with everything it starts:
// the tracker stops counting it, contain moves it out of the run's cgroup
// (into contain's own), and the crash guard and the shim are told to spare
// it. It is already out of COMMAND's process group and session when it
// comes from contain run -d. "First seen" is when its environment is its
// own: a process forked but not yet exec'd shows its parent's, and is
// asked again at each scan until it has exec'd; one first seen without the
// mark stays a member whatever it execs later (package daemon: the
// verdict, and the claims of contain run -d).

// daemons is the run's side of --allow-daemons: sparing when the run
// allows daemons, noDaemons when it does not. noDaemons does nothing and
// computes nothing: a run without --allow-daemons enters none of this,
// but for the mark of a leftover about to be ended (ended).
type daemons interface {
	// bind readies the claims before COMMAND starts (Linux: the
	// socket, so that a contain run -d that comes first finds it).
	bind()
	// judge gives the tracker its Daemon question.
	judge(t *track.Tracker)
	// listen takes claims while the run is supervised, until stop.
	listen() (stop func())
	// spare lets the processes the last scan released (or a claim
	// named) leave the group. Under trackMu.
	spare(ps []proc.Entry)
	// isSpared reports whether id is a daemon the run let go. Under
	// trackMu.
	isSpared(id proc.ID) bool
	// spared is every daemon the run let go.
	spared() []proc.ID
	// onlySpared reports whether contain's only children, the guard
	// aside, are daemons it spared: the reaper then has nothing of the
	// session left to wait for.
	onlySpared() bool
	// ended says, for -v and the report, that a leftover about to be
	// ended carries the daemon mark, and what would have spared it.
	ended(m member, o *report.Leftover)
}

// newDaemons is the run's side of --allow-daemons, as r's options ask.
func newDaemons(r *runner) daemons {
	if !r.o.AllowDaemons {
		return noDaemons{log: r.log}
	}
	return &sparing{r: r}
}

// noDaemons is a run without --allow-daemons: nothing leaves the session.
type noDaemons struct{ log Logger }

func (noDaemons) bind()                 {}
func (noDaemons) judge(*track.Tracker)  {}
func (noDaemons) listen() (stop func()) { return func() {} }
func (noDaemons) spare([]proc.Entry)    {}
func (noDaemons) isSpared(proc.ID) bool { return false }
func (noDaemons) spared() []proc.ID     { return nil }
func (noDaemons) onlySpared() bool      { return false }
func (d noDaemons) ended(m member, o *report.Leftover) {
	if markedLeftover(m, o) {
		d.log("%d (%s) is marked RUNNING_PROCESS_IS_DAEMON=1: ending it with the group (%s would have spared it)", m.pid, m.comm, allowDaemonsHint)
	}
}

const allowDaemonsHint = "contain run --allow-daemons"

// markedLeftover reports whether leftover m carries the daemon mark now,
// and says so in its report entry.
func markedLeftover(m member, o *report.Leftover) bool {
	mk, err := daemon.MarkOf(m.pid, nil)
	if err != nil || !mk.Daemon {
		return false
	}
	o.Daemon = true
	return true
}

// sparing is a run with --allow-daemons: the daemons it let go, and the
// claims it takes (claims_linux.go); what sparing one does it asks of the
// run's other parts (r): its group, crash guard, shim, registry and
// report.
type sparing struct {
	r      *runner
	ids    []proc.ID // the daemons let go; under r.trackMu
	claims claims    // Linux: the claim socket
}

var _ daemons = (*sparing)(nil)

// judge: the verdict of package daemon, on each process as first seen.
func (s *sparing) judge(t *track.Tracker) { t.Daemon = daemon.Judge() }

// spare lets ps leave the group: out of the cgroup, and out of what the
// guard and the shim would end; written to the registry, where contain
// reap --include-daemons finds them, and to the report.
func (s *sparing) spare(ps []proc.Entry) {
	r := s.r
	for _, p := range ps {
		s.ids = append(s.ids, proc.ID{PID: p.PID, Start: p.Start})
	}
	for _, p := range ps {
		// Its name now: the scan may have seen it between fork and exec,
		// under its parent's name (contain, for contain run -d's daemon).
		if c := proc.CommOf(p.PID); c != "?" {
			p.Comm = c
		}
		why := "started by a daemon contain spared"
		if m, err := daemon.MarkOf(p.PID, nil); err == nil && m.Daemon {
			why = "marked RUNNING_PROCESS_IS_DAEMON=1 when first seen"
		}
		r.log("sparing %d (%s): %s (--allow-daemons)", p.PID, p.Comm, why)
		r.emit(events.Daemon{PID: p.PID, Comm: p.Comm, Why: why})
		dir, err := r.grp.release(p.PID)
		switch {
		case err != nil && !proc.Lives(proc.ID{PID: p.PID, Start: p.Start}):
			// It ended meanwhile (ESRCH, or its /proc entry gone): nothing
			// to move, and no error.
			r.log("%d (%s) has ended: nothing to move out of %s", p.PID, p.Comm, r.grp.name())
		case errors.Is(err, errNotInGroup):
			r.log("%d (%s) stays where it is: %v", p.PID, p.Comm, err)
		case err != nil:
			r.log("cannot move %d (%s) out of %s: %v (it will end with the group)", p.PID, p.Comm, r.grp.name(), err)
		case dir != "":
			r.log("moved %d (%s) into %s", p.PID, p.Comm, dir)
		}
		if err := r.guard.Release(p.PID, p.Start); err != nil {
			r.log("cannot tell the crash guard to spare %d (%s): %v", p.PID, p.Comm, err)
		}
		r.sys.releaseFromShim(p)
		r.reg.spared(p, r.log)
		s.note(p)
	}
}

// note records a spared daemon for the report.
func (s *sparing) note(p proc.Entry) {
	r := s.r
	if !r.rec.Collecting() {
		return
	}
	l := &account.Leftover{ID: proc.ID{PID: p.PID, Start: p.Start}, Spared: true}
	o := &l.Out
	o.PID, o.Argv, o.FoundBy, o.Daemon, o.Spared = p.PID, proc.ArgvOf(p.PID), "tracked", true, true
	if o.Argv == nil {
		o.Argv = []string{}
	}
	o.Started = &report.Time{Time: proc.StartWall(p.Start, r.track.Since, r.rec.StartedAt())}
	o.LeftProcessGroup = report.Ptr(p.Pgrp != r.pid)
	r.rec.AddLeftover(l)
}

func (s *sparing) isSpared(id proc.ID) bool { return slices.Contains(s.ids, id) }

func (s *sparing) spared() []proc.ID {
	s.r.trackMu.Lock()
	defer s.r.trackMu.Unlock()
	return slices.Clone(s.ids)
}

// ended: a leftover marked now was not when contain first saw it.
func (s *sparing) ended(m member, o *report.Leftover) {
	if markedLeftover(m, o) {
		s.r.log("%d (%s) carries RUNNING_PROCESS_IS_DAEMON=1 but did not when contain first saw it: ending it with the group", m.pid, m.comm)
	}
}

// sessionRegistry is the session's registry (package registry), made
// once: as the run begins where no cgroup holds the session (its members,
// for contain reap should contain, its shim and its guard all be killed),
// or when the first daemon is spared with one (--allow-daemons: the
// daemon leaves the cgroup, and the registry is where reap finds it).
// Until then its Registry is nil, whose methods do nothing.
type sessionRegistry struct {
	*registry.Registry
	tag   string
	pid   int    // COMMAND; 0: the run has not begun
	since uint64 // COMMAND's start
	tried bool   // a registry was asked for; under trackMu after begin
}

// open makes the registry, once, after the run has begun.
func (g *sessionRegistry) open(log Logger) {
	if g.tried || g.pid == 0 {
		return
	}
	g.tried = true
	reg, err := registry.OpenRegistry(g.tag, g.pid, g.since)
	switch {
	case errors.Is(err, registry.ErrNoCommand):
		log("no registry for contain reap: %v; should contain be killed, reap finds what is left by its tag", err)
		return
	case err != nil:
		log("no registry for contain reap: %v", err)
		return
	}
	g.Registry = reg
}

// spared writes a spared daemon to the registry (made now if there is
// none yet), where contain reap --include-daemons finds it after the
// run, by PID and start time, even when its environment shows no tag
// (redis writes its title over it). Under trackMu.
func (g *sessionRegistry) spared(p proc.Entry, log Logger) {
	g.open(log)
	if err := g.Spared(p.PID, p.Start); err != nil {
		log("cannot write %d (%s) to the registry as spared: %v", p.PID, p.Comm, err)
	}
}

// close ends the registry as the run returns, once nothing opens it any
// more (the scans and the claims have stopped): removed, or kept for
// contain reap --include-daemons while a daemon the run spared still
// runs.
func (g *sessionRegistry) close(spared []proc.ID, log Logger) {
	if path := g.Close(spared); path != "" {
		log("kept the registry %s: contain reap --include-daemons --session %s ends what the run spared", path, g.tag)
	}
}
