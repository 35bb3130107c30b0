//go:build linux || darwin

package run

import (
	"errors"
	"slices"
	"sync"

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
// mark stays a member whatever it execs later.

// daemonVerdict is the tracker's Daemon question, for --allow-daemons.
func daemonVerdict() func(p proc.Entry, parent *proc.Entry) track.Verdict {
	buf := make([]byte, 0, 4096)
	return func(p proc.Entry, parent *proc.Entry) track.Verdict {
		m, err := proc.MarkOf(p.PID, buf)
		if err != nil || m.Digest == emptyDigest() {
			// Gone (the tracker forgets it), or in the middle of an exec,
			// whose new environment is not there yet.
			return track.Undecided
		}
		if parent != nil {
			if pm, err := proc.MarkOf(parent.PID, buf); err == nil && pm.Digest == m.Digest {
				return track.Undecided // its parent's environment: not exec'd yet
			}
		}
		if m.Daemon {
			return track.Daemon
		}
		return track.NotDaemon
	}
}

// emptyDigest is the digest of an empty environment, computed when a
// daemon is first judged (not at every start).
var emptyDigest = sync.OnceValue(func() uint64 { return proc.MarkOfEnv(nil).Digest })

// spare lets the processes the last scan released leave the group: out
// of the cgroup, and out of what the guard and the shim would end.
func (r *runner) spare(ps []proc.Entry) {
	for _, p := range ps {
		// Its name now: the scan may have seen it between fork and exec,
		// under its parent's name (contain, for contain run -d's daemon).
		if c := proc.CommOf(p.PID); c != "?" {
			p.Comm = c
		}
		why := "started by a daemon contain spared"
		if m, err := proc.MarkOf(p.PID, nil); err == nil && m.Daemon {
			why = "marked RUNNING_PROCESS_IS_DAEMON=1 when first seen"
		}
		r.log("sparing %d (%s): %s (--allow-daemons)", p.PID, p.Comm, why)
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
		r.registerSpared(p)
		r.noteSpared(p)
	}
}

// openRegistry makes the session's registry, once (the tracker must be
// made): without a cgroup as the run begins, with one when the first
// daemon is spared. Called before the scans start, or under trackMu.
func (r *runner) openRegistry() {
	if r.regTried || r.track == nil {
		return
	}
	r.regTried = true
	reg, err := registry.OpenRegistry(r.o.Tag, r.pid, r.track.Since)
	if err != nil {
		r.log("no registry for contain reap: %v", err)
		return
	}
	r.reg = reg
}

// registerSpared writes a spared daemon to the registry (made now if
// there is none yet), where contain reap --include-daemons finds it after
// the run, by PID and start time, even when its environment shows no tag
// (redis writes its title over it). Under trackMu.
func (r *runner) registerSpared(p proc.Entry) {
	r.openRegistry()
	if err := r.reg.Spared(p.PID, p.Start); err != nil {
		r.log("cannot write %d (%s) to the registry as spared: %v", p.PID, p.Comm, err)
	}
}

// closeRegistry ends the registry as the run returns: removed, or kept
// for contain reap --include-daemons while a daemon the run spared still
// runs.
func (r *runner) closeRegistry() {
	r.trackMu.Lock()
	reg, spared := r.reg, slices.Clone(r.spared)
	r.trackMu.Unlock()
	if path := reg.Close(spared); path != "" {
		r.log("kept the registry %s: contain reap --include-daemons --session %s ends what the run spared", path, r.o.Tag)
	}
}

// noteSpared records a spared daemon for the report.
func (r *runner) noteSpared(p proc.Entry) {
	if r.rec == nil {
		return
	}
	l := &leftover{id: proc.ID{PID: p.PID, Start: p.Start}, spared: true, done: true}
	o := &l.out
	o.PID, o.Argv, o.FoundBy, o.Daemon, o.Spared = p.PID, proc.ArgvOf(p.PID), "tracked", true, true
	if o.Argv == nil {
		o.Argv = []string{}
	}
	o.Started = &report.Time{Time: proc.StartWall(p.Start, r.track.Since, r.rec.facts.Started)}
	o.LeftProcessGroup = report.Ptr(p.Pgrp != r.pid)
	r.rec.addLeftover(l)
}

// daemonEnded says, for -v and the report, that a leftover about to be
// ended carries the daemon mark, and what would have spared it.
func (r *runner) daemonEnded(m member, o *report.Leftover) {
	mk, err := proc.MarkOf(m.pid, nil)
	if err != nil || !mk.Daemon {
		return
	}
	o.Daemon = true
	if r.o.AllowDaemons {
		r.log("%d (%s) carries RUNNING_PROCESS_IS_DAEMON=1 but did not when contain first saw it: ending it with the group", m.pid, m.comm)
		return
	}
	r.log("%d (%s) is marked RUNNING_PROCESS_IS_DAEMON=1: ending it with the group (%s would have spared it)", m.pid, m.comm, allowDaemonsHint)
}

const allowDaemonsHint = "contain run --allow-daemons"
