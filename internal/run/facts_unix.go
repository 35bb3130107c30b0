//go:build linux || darwin

package run

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// noteLeftovers records the processes alive after COMMAND ended, each
// once: those there when the close began, and those found while closing.
func (r *runner) noteLeftovers(ms []member) {
	sid, sidErr := unix.Getsid(0) // COMMAND's session is contain's
	for _, m := range ms {
		id := proc.ID{PID: m.pid, Start: m.start}
		if r.rec.Knows(id) {
			continue
		}
		l := &account.Leftover{ID: id}
		o := &l.Out
		o.PID, o.Comm, o.Argv, o.FoundBy = m.pid, m.comm, r.procs.argvOf(m.pid), "cgroup"
		if o.Argv == nil {
			o.Argv = []string{}
		}
		switch {
		case m.start == 0:
			why := "it ended before contain could read it"
			o.Absent = map[string]string{"started": why, "left_process_group": why, "left_session": why}
		case r.o.Hold:
			// No COMMAND whose process group, session or output it could
			// have left: the program started each process in it.
			r.trackMu.Lock()
			o.FoundBy = r.track.FoundBy(m.pid)
			r.trackMu.Unlock()
			o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.rec.StartedAt())}
			why := "a held session (a library Group) has no COMMAND"
			o.Absent = map[string]string{"left_process_group": why, "left_session": why, "held_stdout": why, "held_stderr": why}
		default:
			r.trackMu.Lock()
			o.FoundBy = r.track.FoundBy(m.pid)
			r.trackMu.Unlock()
			o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.rec.StartedAt())}
			o.LeftProcessGroup = report.Ptr(m.entry.Pgrp != r.pid)
			e := m.entry
			e.PID = m.pid
			if msid, ok := sessionOf(e); ok && sidErr == nil {
				o.LeftSession = report.Ptr(msid != sid)
			} else {
				o.Absent = map[string]string{"left_session": "its session or contain's could not be read"}
			}
		}
		r.daemons.ended(m, o)
		r.leftPorts.note(id, o)
		var why string
		if !r.o.Hold {
			o.HeldStdout, o.HeldStderr, why = r.procs.heldStdio(m.pid)
		}
		if why != "" {
			if o.Absent == nil {
				o.Absent = map[string]string{}
			}
			o.Absent["held_stdout"], o.Absent["held_stderr"] = why, why
		}
		r.rec.AddLeftover(l)
	}
}

// noteEnding records that contain is about to send m sig (its name) to
// end it, in the main loop's phase; the first time, with its name and
// command line, read now, while it lives (not in a limit's kill, which
// must not wait for it). It returns what undoes the record, for a send
// that fails.
func (r *runner) noteEnding(m member, sig string) (undo func()) {
	if r.phase == "" {
		return func() {}
	}
	undo, _ = r.rec.AddEnding(proc.ID{PID: m.pid, Start: m.start}, sig, func() *account.Ending {
		e := &account.Ending{Out: report.Ended{PID: m.pid, Comm: m.comm, Command: m.pid == r.pid, Phase: r.phase}}
		o := &e.Out
		o.Absent = map[string]string{}
		if o.Comm == "" {
			o.Absent["comm"] = "it ended before contain could read it"
		}
		if r.phase == report.PhaseLimit {
			o.Absent["argv"] = "not read: a limit's kill does not wait for it"
		} else if o.Argv = r.procs.argvOf(m.pid); o.Argv == nil {
			o.Absent["argv"] = "it could not be read (it was ending)"
		}
		if m.start != 0 && r.track != nil {
			o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.rec.StartedAt())}
		} else {
			o.Absent["started"] = "it ended before contain could read it"
		}
		return e
	})
	return undo
}

// noteSignal records the last signal sent to a leftover.
// It returns what was recorded before, to be put back if the send fails.
func (r *runner) noteSignal(m member, sig string) (before string) {
	return r.rec.Signalled(proc.ID{PID: m.pid, Start: m.start}, sig)
}

// noteGone records the end of each leftover not among live (nil: none is
// left).
func (r *runner) noteGone(live []member) {
	alive := make(map[proc.ID]bool, len(live))
	for _, m := range live {
		alive[proc.ID{PID: m.pid, Start: m.start}] = true
	}
	check, emit := r.goneCheck(func(l *account.Leftover) bool { return !alive[l.ID] })
	r.rec.Gone(check)
	emit(live == nil)
}

// finishFacts completes the facts once the group is closed: a process
// ended by its wait status where contain reaped it, else by the last
// signal contain sent it.
func (r *runner) finishFacts() *account.Facts {
	rec := r.rec
	f := rec.Finish(func(l *account.Leftover) string {
		ws, reaped := rec.Reaped(l.ID.PID)
		return proc.EndedBy(l.Signal, ws, reaped)
	}, func(e *account.Ending) string {
		ws, reaped := rec.Reaped(e.ID.PID)
		if e.Out.Command {
			ws, reaped = r.status, r.mainDone
		}
		if !reaped && r.procs.lives(e.ID) {
			return account.StillRunning
		}
		return proc.EndedBy(e.Out.Signal, ws, reaped)
	}, nil)
	if f == nil {
		return nil
	}
	res := &f.Resources
	res.Sources, res.Absent = map[string]string{}, map[string]string{}
	cg := r.grp.resources(res)
	u := rec.Usage()
	if res.CPUUserSeconds == nil {
		res.CPUUserSeconds, res.CPUSystemSeconds = report.Seconds(u.User), report.Seconds(u.System)
		res.Sources["cpu"] = reapedSource(r.sys.complete())
	}
	if u.N > 0 {
		res.MaxProcessRSSBytes = report.Ptr(u.MaxRSS)
		res.Sources["max_process_rss_bytes"] = reapedSource(r.sys.complete())
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
	if n, ok := r.lim.sampledProcs(); ok && res.PeakProcesses == nil {
		// One count: the process limit's (limits.pids.peak).
		res.PeakProcesses = report.Ptr(max(n, 1))
		res.Sources["peak_processes"] = "contain's counts for --pids, on every scan or sample while COMMAND ran and while the group was closed (" + limitPace() + ")"
	}
	if res.PeakProcesses == nil {
		if cg {
			res.Absent["peak_processes"] = "the pids controller is not enabled in contain's cgroup, and contain does not scan when it has a cgroup"
		} else {
			res.PeakProcesses = report.Ptr(max(u.Peak, 1))
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
