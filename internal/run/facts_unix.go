//go:build linux || darwin

package run

import (
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// noteLeftovers records the processes alive after COMMAND ended, each
// once: those there when the close began, and those found while closing.
func (r *runner) noteLeftovers(ms []member) {
	if r.rec == nil {
		return
	}
	sid, _ := unix.Getsid(0) // COMMAND's session is contain's
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	known := make(map[proc.ID]bool, len(r.rec.left))
	for _, l := range r.rec.left {
		known[l.id] = true
	}
	for _, m := range ms {
		if known[proc.ID{PID: m.pid, Start: m.start}] {
			continue
		}
		l := &leftover{id: proc.ID{PID: m.pid, Start: m.start}}
		o := &l.out
		o.PID, o.Comm, o.Argv, o.FoundBy = m.pid, m.comm, proc.ArgvOf(m.pid), "cgroup"
		if o.Argv == nil {
			o.Argv = []string{}
		}
		if m.start == 0 {
			why := "it ended before contain could read it"
			o.Absent = map[string]string{"started": why, "left_process_group": why, "left_session": why}
		} else {
			r.trackMu.Lock()
			o.FoundBy = r.track.FoundBy(m.pid)
			r.trackMu.Unlock()
			o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.rec.facts.Started)}
			o.LeftProcessGroup = report.Ptr(m.entry.Pgrp != r.pid)
			msid := m.entry.Sid
			if msid == 0 {
				msid, _ = unix.Getsid(m.pid)
			}
			o.LeftSession = report.Ptr(msid != sid)
		}
		r.daemonEnded(m, o)
		var why string
		o.HeldStdout, o.HeldStderr, why = proc.HeldStdio(m.pid)
		if why != "" {
			if o.Absent == nil {
				o.Absent = map[string]string{}
			}
			o.Absent["held_stdout"], o.Absent["held_stderr"] = why, why
		}
		r.rec.left = append(r.rec.left, l)
	}
}

// ending is a process contain signalled to end it, for the report's
// ended_by_contain.
type ending struct {
	id  proc.ID
	out report.Ended
}

// noteEnding records that contain is about to send m sig (its name) to
// end it, in the main loop's phase; the first time, with its name and
// command line, read now, while it lives (not in a limit's kill, which
// must not wait for it). It returns what undoes the record, for a send
// that fails: a process already gone was not ended by contain.
func (r *runner) noteEnding(m member, sig string) (undo func()) {
	if r.rec == nil || r.phase == "" {
		return func() {}
	}
	id := proc.ID{PID: m.pid, Start: m.start}
	r.rec.mu.Lock()
	for _, e := range r.rec.ended {
		if e.id == id {
			before := e.out.Signal
			e.out.Signal = sig
			r.rec.mu.Unlock()
			return func() {
				r.rec.mu.Lock()
				e.out.Signal = before
				r.rec.mu.Unlock()
			}
		}
	}
	r.rec.mu.Unlock()
	e := &ending{id: id, out: report.Ended{PID: m.pid, Comm: m.comm, Command: m.pid == r.pid, Phase: r.phase, Signal: sig}}
	o := &e.out
	o.Absent = map[string]string{}
	if o.Comm == "" {
		o.Absent["comm"] = "it ended before contain could read it"
	}
	if r.phase == report.PhaseLimit {
		o.Absent["argv"] = "not read: a limit's kill does not wait for it"
	} else if o.Argv = proc.ArgvOf(m.pid); o.Argv == nil {
		o.Absent["argv"] = "it could not be read (it was ending)"
	}
	if m.start != 0 && r.track != nil {
		o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.rec.facts.Started)}
	} else {
		o.Absent["started"] = "it ended before contain could read it"
	}
	r.rec.mu.Lock()
	r.rec.ended = append(r.rec.ended, e)
	r.rec.mu.Unlock()
	return func() {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		if i := slices.Index(r.rec.ended, e); i >= 0 {
			r.rec.ended = slices.Delete(r.rec.ended, i, i+1)
		}
	}
}

// noteSignal records the last signal sent to a leftover.
// It returns what was recorded before, to be put back if the send fails.
func (r *runner) noteSignal(m member, sig string) (before string) {
	if r.rec == nil {
		return ""
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, l := range r.rec.left {
		if l.id == (proc.ID{PID: m.pid, Start: m.start}) && !l.done {
			before, l.signal = l.signal, sig
		}
	}
	return before
}

// noteGone records the end of each leftover not among live (nil: none is
// left): by its wait status when contain reaped it, else by the last
// signal contain sent it.
func (r *runner) noteGone(live []member) {
	if r.rec == nil {
		return
	}
	alive := map[proc.ID]bool{}
	for _, m := range live {
		alive[proc.ID{PID: m.pid, Start: m.start}] = true
	}
	now := time.Now()
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, l := range r.rec.left {
		if l.done || alive[l.id] {
			continue
		}
		l.done = true
		l.out.EndedAfterSeconds = report.Seconds(now.Sub(r.rec.facts.CommandEnded))
		// How it ended is read at the end (finishFacts): its status may
		// come later.
	}
}

// finishFacts completes the facts once the group is closed.
func (r *runner) finishFacts() *Facts {
	if r.rec == nil {
		return nil
	}
	f := &r.rec.facts
	f.Ended = time.Now()
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, l := range r.rec.left {
		if l.spared {
			l.out.EndedBy = sparedEnding
		} else if l.done {
			ws, reaped := r.rec.reaped[l.id.PID]
			l.out.EndedBy = proc.EndedBy(l.signal, ws, reaped)
		} else {
			l.out.EndedBy = "still running"
		}
		f.Leftovers = append(f.Leftovers, l.out)
	}
	for _, e := range r.rec.ended {
		o := &e.out
		ws, reaped := r.rec.reaped[e.id.PID]
		if o.Command {
			ws, reaped = r.status, r.mainDone
		}
		switch {
		case !reaped && proc.Lives(e.id):
			o.EndedBy = "still running"
		default:
			o.EndedBy = proc.EndedBy(o.Signal, ws, reaped)
		}
		if len(o.Absent) == 0 {
			o.Absent = nil
		}
		f.EndedByContain = append(f.EndedByContain, *o)
	}
	res := &f.Resources
	res.Sources, res.Absent = map[string]string{}, map[string]string{}
	cg := r.grp.resources(res)
	if res.CPUUserSeconds == nil {
		res.CPUUserSeconds, res.CPUSystemSeconds = report.Seconds(r.rec.usage.user), report.Seconds(r.rec.usage.system)
		res.Sources["cpu"] = reapedSource(r.complete())
	}
	if r.rec.usage.n > 0 {
		res.MaxProcessRSSBytes = report.Ptr(r.rec.usage.maxRSS)
		res.Sources["max_process_rss_bytes"] = reapedSource(r.complete())
	} else {
		res.Absent["max_process_rss_bytes"] = "contain reaped no process"
	}
	if res.PeakMemoryBytes == nil {
		if cg {
			res.Absent["peak_memory_bytes"] = "the memory controller is not enabled in contain's cgroup"
		} else {
			res.Absent["peak_memory_bytes"] = "no cgroup: " + runtime.GOOS + " keeps no peak for a group of processes"
		}
	}
	if n, ok := r.sampledProcs(); ok && res.PeakProcesses == nil {
		// One count: the process limit's (limits.pids.peak).
		res.PeakProcesses = report.Ptr(max(n, 1))
		res.Sources["peak_processes"] = "contain's counts for --pids, on every scan or sample while COMMAND ran and while the group was closed (" + limitPace + ")"
	}
	if res.PeakProcesses == nil {
		if cg {
			res.Absent["peak_processes"] = "the pids controller is not enabled in contain's cgroup, and contain does not scan when it has a cgroup"
		} else {
			res.PeakProcesses = report.Ptr(max(r.rec.peak, 1))
			res.Sources["peak_processes"] = "contain's scans while COMMAND ran (sampled: a process that lived between two scans is not counted)"
		}
	}
	if res.IOReadBytes == nil {
		res.Absent["io_read_bytes"] = ioAbsent(cg)
		res.Absent["io_write_bytes"] = ioAbsent(cg)
	}
	return f
}

// reapedSource describes the CPU and RSS figures from rusage.
func reapedSource(complete bool) string {
	if complete {
		return "rusage of every process contain (or its shim) reaped: COMMAND and the orphans adopted as subreaper, each with what it reaped"
	}
	return "rusage of the processes contain reaped (COMMAND, with what it reaped); escapees re-parented to PID 1 are not counted"
}

func ioAbsent(inCgroup bool) string {
	if inCgroup {
		return "the io controller is not enabled in contain's cgroup"
	}
	return "no cgroup: no I/O accounting for a group of processes"
}
