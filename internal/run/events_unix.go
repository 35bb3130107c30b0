//go:build linux || darwin

package run

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/report"
)

// runEvents is what the Linux and macOS runner keeps for its events
// (Options.Events): the escapees said, and the leftovers seen gone whose
// status contain has not reaped yet.
type runEvents struct {
	// commandEnded: COMMAND has ended; from then on a process out of
	// its tree is a leftover, not an escapee.
	commandEnded atomic.Bool
	sid          int              // COMMAND's session: contain's (0: its leader is out of this PID namespace)
	sidKnown     bool             // sid was read
	joined       map[proc.ID]bool // under trackMu

	mu      sync.Mutex
	pending []goneLeftover
}

// goneLeftover is a leftover seen gone: its status may come a moment
// later, from the reaper.
type goneLeftover struct {
	pid        int
	comm, sent string
	ports      []report.Port
}

// emit writes e, when the run has events.
func (r *runner) emit(e events.Event) { r.o.Events.Emit(e) }

// emitStarted says that COMMAND runs, in layers.
func (r *runner) emitStarted(layers []string) {
	if r.o.Events == nil {
		return
	}
	sid, err := unix.Getsid(0)
	r.ev.sid, r.ev.sidKnown = sid, err == nil
	r.emit(events.Started{PID: r.pid, Command: r.o.Args, Layers: layers, ContainPID: r.self, Held: r.o.Hold})
}

// emitJoined says, once each, the members of a scan (live) that are out
// of COMMAND's tree as it started it while COMMAND runs: out of its
// process group (setsid, setpgid), or whose parent is no member (it
// ended: a double fork). Under trackMu.
func (r *runner) emitJoined(live []proc.Entry) {
	if r.o.Events == nil || r.o.Hold || r.ev.commandEnded.Load() {
		return
	}
	in := make(map[int]bool, len(live))
	for _, p := range live {
		in[p.PID] = true
	}
	if r.ev.joined == nil {
		r.ev.joined = map[proc.ID]bool{}
	}
	for _, p := range live {
		id := proc.ID{PID: p.PID, Start: p.Start}
		if p.PID == r.pid || r.ev.joined[id] {
			continue
		}
		left, orphan := p.Pgrp != r.pid, !in[p.PPID]
		if !left && !orphan {
			continue
		}
		r.ev.joined[id] = true
		j := events.Joined{PID: p.PID, PPID: p.PPID, Comm: p.Comm, FoundBy: r.track.FoundBy(p.PID), LeftProcessGroup: left, Reparented: orphan}
		if sid, ok := sessionOf(p); ok && r.ev.sidKnown {
			j.LeftSession = report.Ptr(sid != r.ev.sid)
		}
		r.emit(j)
	}
}

// sessionOf is p's session as this PID namespace sees it, and whether it
// could be read: the scan's, or getsid's where the scan has none (macOS).
// 0 is a session like any other: its leader is out of this namespace (a
// container's processes, started from outside it), as contain's own
// session's is there. A member that called setsid leads a session of its
// own, which this namespace sees, so a session of 0 beside contain's 0 is
// contain's.
func sessionOf(p proc.Entry) (int, bool) {
	if p.Sid != 0 {
		return p.Sid, true
	}
	sid, err := unix.Getsid(p.PID)
	return sid, err == nil
}

// emitSignal says that sig (its name) went to m, for why (the main
// loop's phase, or a signal forwarded).
func (r *runner) emitSignal(name string, m member, phase string) {
	if r.o.Events != nil {
		r.emit(events.Signal{Signal: name, To: events.ToProcess, PID: m.pid, Comm: m.comm, Why: signalWhy(phase)})
	}
}

// emitForwarded says that sig, received by contain, was passed on to the
// group.
func (r *runner) emitForwarded(sig unix.Signal) {
	if r.o.Events != nil {
		r.emit(events.Signal{Signal: signals.Name(sig), To: events.ToGroup, Why: events.WhyForwarded})
	}
}

// goneCheck is noteGone's question of each leftover (ended), which also
// keeps, for the events, those it finds gone.
func (r *runner) goneCheck(ended func(*account.Leftover) bool) (check func(*account.Leftover) bool, emit func(final bool)) {
	if r.o.Events == nil {
		return ended, func(bool) {}
	}
	var gone []goneLeftover
	return func(l *account.Leftover) bool {
			if !ended(l) {
				return false
			}
			gone = append(gone, goneLeftover{pid: l.Out.PID, comm: l.Out.Comm, sent: l.Signal, ports: l.Out.Ports})
			return true
		}, func(final bool) {
			r.emitGone(gone, final)
		}
}

// emitGone says how each leftover seen gone ended, in the report's words:
// once its status is reaped where contain (or its shim) reaps every
// process, else at once (a held session's processes are its program's
// children, never the holder's); final (nothing of the group is left)
// says the rest as they are.
func (r *runner) emitGone(gone []goneLeftover, final bool) {
	r.ev.mu.Lock()
	defer r.ev.mu.Unlock()
	all := append(r.ev.pending, gone...)
	r.ev.pending = nil
	for _, g := range all {
		ws, reaped := r.rec.Reaped(g.pid)
		if !reaped && !final && r.sys.complete() && !r.o.Hold {
			r.ev.pending = append(r.ev.pending, g)
			continue
		}
		r.emit(events.Leftover{PID: g.pid, Comm: g.comm, EndedBy: proc.EndedBy(g.sent, ws, reaped), Ports: g.ports})
	}
}

// emitKernelLimits says the limits the kernel held that it found
// exceeded, once COMMAND has ended (an OOM kill, a refused fork).
func (r *runner) emitKernelLimits() {
	if l, ok := r.lim.(*limiter); ok {
		emitLimits(r.o.Events, l.Watch())
	}
}
