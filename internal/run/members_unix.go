//go:build linux || darwin

package run

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/supervise"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// member is one process of the group, as seen by a scan.
type member struct {
	pid   int
	comm  string
	start uint64     // 0: found only through the cgroup
	entry proc.Entry // as the scan saw it (zero for the cgroup's)
}

// cpuTime is the CPU time contain has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// signal sends sig to m, after checking that the PID still names the
// process that was seen (through a pidfd on Linux).
func (r *runner) signal(m member, sig syscall.Signal) error {
	if sig == unix.SIGKILL {
		r.sentKill.Store(true)
	}
	return r.procs.signal(m.pid, m.start, sig, r.grp)
}

// signalGroup sends sig to every process of the group, once each, except
// the members of a nested session (a contain run inside this one, or
// another tool that tags its own): those are left to their originator,
// itself a member, which passes the signal on as it should (its own -s on
// SIGALRM, say), so that nothing gets a signal twice and nested timeouts
// cascade as GNU timeout's do. Closing the group spares nothing.
func (r *runner) signalGroup(sig syscall.Signal) { r.sendGroup(sig, false) }

// endGroup sends sig to the group as signalGroup does, to end it (the
// timeout signal, a request to stop): -v names each process it goes to,
// and the report's ended_by_contain records it, in the main loop's phase.
func (r *runner) endGroup(sig syscall.Signal) { r.sendGroup(sig, true) }

func (r *runner) sendGroup(sig syscall.Signal, ending bool) {
	name := signals.Name(sig)
	if !ending {
		r.sendEach(sig, name, r.notNested(r.members()), false)
		return
	}
	held, thaw := r.still(sig)
	defer thaw()
	if held != nil {
		// Stopped one by one until a scan found none running: the
		// members, as the last scan saw them.
		r.sendEach(sig, name, held, true)
		return
	}
	// Frozen, or not held: the tree may yet hold a child whose fork was
	// under way when it was frozen, so the members are looked at again
	// until a scan finds none the signal has not gone to (a few times at
	// most).
	sent := map[proc.ID]bool{}
	for range 10 {
		var todo []member
		for _, m := range r.notNested(r.members()) {
			if id := (proc.ID{PID: m.pid, Start: m.start}); !sent[id] {
				sent[id] = true
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			return
		}
		r.sendEach(sig, name, todo, true)
	}
}

// sendEach sends sig to each of ms; ending: as endGroup says.
func (r *runner) sendEach(sig syscall.Signal, name string, ms []member, ending bool) {
	for _, m := range ms {
		undo := func() {}
		if ending {
			undo = r.noteEnding(m, name)
			r.log("sending %s to %d (%s)", name, m.pid, m.comm)
		}
		if err := r.signal(m, sig); err != nil {
			undo()
			if !errors.Is(err, unix.ESRCH) && !errors.Is(err, proc.ErrGone) {
				r.log("cannot send %s to %d (%s): %v", name, m.pid, m.comm, err)
			}
			continue
		}
		if ending {
			r.emitSignal(name, m, r.phase)
		}
		if ending && sig == unix.SIGTERM {
			if r.termSent == nil {
				r.termSent = map[proc.ID]bool{}
			}
			r.termSent[proc.ID{PID: m.pid, Start: m.start}] = true
		}
	}
}

// still holds the tree still while sig goes to each of its processes,
// and returns what lets it go on (the signals sent meanwhile are acted on
// then), so that a tree that forks faster than contain can list it (a
// fork bomb) meets one pass over a fixed set, not a race it may lose. A
// bomb's hundreds of runnable processes also take the CPU from contain:
// held, they give it back. (Measured with bench/bomb-end.sh, 1,000 perl
// processes spinning in fork on 2 CPUs: the SIGTERM pass had not ended
// 61 s after the timeout as root, 123 s as nobody; held, contain ended
// 0.3 s after its timeout.)
//
// Where there is a cgroup it is frozen: the kernel stops every process in
// it, a fork under way included. Else, while COMMAND lives, SIGSTOP to
// COMMAND's process group in one signal, then to every member not of a
// nested session (stopEach; a nested contain holds its own), and SIGCONT
// to them after; held is then those members. A stop signal is not held
// (it would be undone), nor are the members once COMMAND has ended (its
// process group may be gone).
func (r *runner) still(sig syscall.Signal) (held []member, thaw func()) {
	nothing := func() {}
	if r.sys.freezable() {
		if r.sys.freeze(true) != nil {
			return nil, nothing
		}
		// Every process frozen: none is in the middle of a fork whose
		// child the pass would miss. At most three seconds (a loaded
		// machine schedules each process before it freezes; one second
		// was not always enough with a 150-process bomb under CI's
		// load): sendGroup looks again for such a child in any case.
		deadline := time.Now().Add(3 * time.Second)
		for !r.sys.frozen() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !r.sys.frozen() {
			r.log("the tree was not frozen 3 s after it was asked to be: signalling it all the same")
		}
		return nil, func() {
			// A tree halted for a limit stays stopped for its kill.
			if !r.lim.halted() {
				r.sys.freeze(false)
			}
		}
	}
	switch sig {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGCONT, unix.SIGKILL:
		return nil, nothing
	}
	if !r.commandGroup(unix.SIGSTOP) {
		return nil, nothing
	}
	held = r.stopEach(nil, true)
	return held, func() {
		r.commandGroup(unix.SIGCONT)
		for _, m := range held {
			r.signal(m, unix.SIGCONT)
		}
	}
}

// commandGroup sends sig to COMMAND's process group in one signal, while
// COMMAND is not reaped (its process group is then its own), and says
// whether it did. A SIGSTOP is contain's own from then on (selfStopped).
// Only the main loop's goroutine, and the close after it, call it.
func (r *runner) commandGroup(sig syscall.Signal) bool {
	if r.mainDone || r.pid <= 0 {
		return false
	}
	if sig == unix.SIGSTOP {
		r.selfStopped.Store(true)
	}
	if sig == unix.SIGKILL {
		r.sentKill.Store(true)
	}
	return unix.Kill(-r.pid, sig) == nil
}

// notNested drops the members whose tag names another live member as
// their originator.
func (r *runner) notNested(members []member) []member {
	in := make(map[int]bool, len(members))
	for _, m := range members {
		in[m.pid] = true
	}
	out := members[:0:0]
	for _, m := range members {
		if v, ok, err := r.procs.readTag(m.pid); err == nil && ok && v != r.o.Tag {
			if _, pid, err := tag.Parse(v); err == nil && pid != m.pid && in[pid] {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// killGroup sends SIGKILL to everything: cgroup.kill first, which also
// wins a fork race, then each process found by the scan (one that left the
// cgroup, or every one when there is none), the newest first: in a fork
// bomb those are the ones forking.
func (r *runner) killGroup() {
	r.sentKill.Store(true)
	var members []member
	if r.sys.freezable() {
		members = r.members()
	} else {
		// No cgroup.kill to win the race for contain: the tree is
		// stopped first, then killed; else a tree that forks as fast as
		// it is killed (a fork bomb) outlives the pass.
		r.selfStopped.Store(true)
		r.commandGroup(unix.SIGSTOP) // all of it before the first scan
		members = r.stopEach(nil, false)
	}
	members = newestFirst(members)
	if r.mainDone {
		r.readPorts(members)
		r.noteLeftovers(members)
	}
	r.noteGone(members)
	// Recorded before the kill: once killed, a process's command line
	// cannot be read.
	undo := make([]func(), len(members))
	for i, m := range members {
		undo[i] = r.noteEnding(m, "SIGKILL")
	}
	cgKilled := r.grp.kill()
	if cgKilled && r.o.Events != nil {
		// cgroup.kill: every process in the cgroup, those no scan named
		// included.
		r.emit(events.Signal{Signal: "SIGKILL", To: events.ToGroup, Why: signalWhy(r.phase)})
	}
	for i, m := range members {
		before := r.noteSignal(m, "SIGKILL")
		if err := r.signal(m, unix.SIGKILL); err == nil || cgKilled {
			r.log("killed %d (%s%s)", m.pid, m.comm, r.listening(m))
			r.emitSignal("SIGKILL", m, r.phase)
		} else {
			r.noteSignal(m, before)
			undo[i]()
		}
	}
	if !cgKilled && inGroup(members, r.pid) {
		// Without cgroup.kill: what COMMAND's process group's SIGSTOP
		// held still and no scan named (a busy machine's scan missed
		// it) would wait there, stopped, for the close's SIGCONT, and
		// then fork on (a fork bomb refilled its tree so, at full suite
		// load). The group is the session's while a member is in it.
		unix.Kill(-r.pid, unix.SIGKILL)
	}
}

// anyLeft reports whether any process of the group still lives.
func (r *runner) anyLeft() bool {
	select {
	case <-r.noKids:
	default:
		if !r.daemons.onlySpared() {
			return true
		}
	}
	return r.othersLeft()
}

// othersLeft reports whether a process of the group that is no child of
// contain still lives: in the cgroup, or found by the tracker.
func (r *runner) othersLeft() bool {
	if r.grp.populated() {
		return true
	}
	if r.sys.complete() {
		return false
	}
	// A member read as a zombie may have forked after the scan listed the
	// PIDs (track.ZombieSeen): the next scan lists its child, while that
	// child may still name the zombie as its parent. A few at most: each
	// takes a scan, and a chain of fork-and-exit can go on.
	for range 4 {
		live, _ := r.scanAll()
		if len(live) > 0 {
			return true
		}
		r.trackMu.Lock()
		again := r.track.ZombieSeen()
		r.trackMu.Unlock()
		if !again {
			return false
		}
	}
	return false
}

// closeGroup runs after COMMAND ended: SIGTERM (and SIGCONT, for stopped
// processes) to everything left, SIGKILL to what is still there after the
// grace period, and return only when nothing is left. A stop request during
// the grace period kills at once.
func (r *runner) closeGroup() {
	defer r.grp.remove()
	// A held session has no subreaper to hold what the cgroup held once
	// it is removed: whether the cgroup held every process is asked
	// before.
	heldAll := r.o.Hold && r.sys.strong() && !r.heldOutside
	// Nothing left is the common case: no child, and the cgroup (if any)
	// can be removed, which only an empty group can.
	if !r.more && r.grp.emptied() && (heldAll || r.sys.complete() || !r.othersLeft()) {
		return
	}
	defer r.noteGone(nil)
	// What COMMAND left running, where nothing had ended the run
	// before (a timeout, a request to stop, a limit: each says so).
	r.nameLeft = r.phase == "" && !r.o.Hold
	r.phase = report.PhaseClose
	ms := r.members()
	r.readPorts(ms)
	r.noteLeftovers(ms)
	r.nameLeftovers(ms)
	supervise.Close(r.o.Grace, &closer{r: r, termed: map[proc.ID]bool{}}, nil)
}

// nameLeftovers keeps the names of the leftovers among ms not seen before
// (Result.Leftovers): what COMMAND left running, counted without the
// account, which is not kept unless asked for.
func (r *runner) nameLeftovers(ms []member) {
	if !r.nameLeft {
		return
	}
	if r.leftSeen == nil {
		r.leftSeen = map[proc.ID]bool{}
	}
	for _, m := range ms {
		if id := (proc.ID{PID: m.pid, Start: m.start}); !r.leftSeen[id] {
			r.leftSeen[id] = true
			r.leftNames = append(r.leftNames, r.leftoverName(m))
		}
	}
}

// closer is the close of the group as package supervise runs it: SIGTERM
// to each member once, SIGKILL to the group.
type closer struct {
	r      *runner
	termed map[proc.ID]bool // comm changes on exec; these do not
}

func (c *closer) Left() bool                  { return c.r.anyLeft() }
func (c *closer) Kill()                       { c.r.killGroup() }
func (c *closer) Wait(d time.Duration) bool   { return c.r.pause(d) }
func (c *closer) Log(format string, a ...any) { c.r.log(format, a...) }

// Ask sends SIGTERM (and SIGCONT) to each member not sent it yet.
func (c *closer) Ask() {
	r := c.r
	ms := r.members()
	r.readPorts(ms)
	r.noteLeftovers(ms)
	r.nameLeftovers(ms)
	r.noteGone(ms)
	for _, m := range ms {
		id := proc.ID{PID: m.pid, Start: m.start}
		if c.termed[id] {
			continue
		}
		c.termed[id] = true
		if r.termSent[id] {
			// A request to stop (or the timeout) sent it SIGTERM
			// already: it is not sent, nor said, twice; the report
			// says it ended after it.
			r.noteSignal(m, "SIGTERM")
			continue
		}
		// Recorded before it is sent: the reaper may see it end before
		// this goroutine goes on.
		before := r.noteSignal(m, "SIGTERM")
		undo := r.noteEnding(m, "SIGTERM")
		r.log("sending SIGTERM to leftover %d (%s%s)", m.pid, m.comm, r.listening(m))
		if err := r.signal(m, unix.SIGTERM); err == nil {
			r.emitSignal("SIGTERM", m, r.phase)
			r.signal(m, unix.SIGCONT)
		} else {
			r.noteSignal(m, before)
			undo()
		}
	}
}

// pause waits until the last child is reaped, a stop request comes (then
// it returns true) or d has passed, whichever is first; other signals are
// forwarded.
func (r *runner) pause(d time.Duration) (stop bool) {
	t := time.NewTimer(max(d, time.Millisecond))
	defer t.Stop()
	noKids := r.noKids
	select {
	case <-noKids:
		if !r.othersLeft() {
			return false
		}
		if r.o.Hold {
			// A held session's processes are no children of the holder:
			// none of them ends where a wait would see it. Looked at
			// again, sooner at first, until the period is over.
			return r.pollLeft(t.C)
		}
		// Something outside contain's tree is still there: only the
		// timer tells when to look again.
		<-t.C
	case <-t.C:
	case s := <-r.sigs:
		sig := s.(syscall.Signal)
		switch {
		case stopRequest(sig):
			r.log("received %s while closing: killing the group", signals.Name(sig))
			return true
		case sig == unix.SIGALRM: // COMMAND has ended: nothing to time out
		default:
			r.signalGroup(sig)
			r.emitForwarded(sig)
		}
	}
	return false
}

// pollLeft looks again for what is left of a held session, 5 ms after
// the last look at first and at most 100 ms, until nothing is (false),
// a stop request comes (true) or over fires.
func (r *runner) pollLeft(over <-chan time.Time) (stop bool) {
	d := 5 * time.Millisecond
	for {
		t := time.NewTimer(d)
		select {
		case <-over:
			t.Stop()
			return false
		case s := <-r.sigs:
			t.Stop()
			if sig := s.(syscall.Signal); stopRequest(sig) {
				r.log("received %s while closing: killing the group", signals.Name(sig))
				return true
			}
		case <-t.C:
			if !r.othersLeft() {
				return false
			}
			d = min(d*2, 100*time.Millisecond)
		}
	}
}

// trackEvery is how often contain scans for new processes while COMMAND
// runs, when no cgroup keeps them in sight: at first, after a new member
// is found, and then less often while nothing changes (the scans cost
// time in proportion to the processes on the machine).
const (
	trackFirst = 5 * time.Millisecond
	trackEvery = 200 * time.Millisecond
	trackShare = 10 // the pause is at least this many times the scan
)

// watch scans while COMMAND runs, so that the tracker sees every process
// while its links to the session still show, and tells the guard of each
// new one. It returns the function that stops it.
func (r *runner) watch() (stop func()) {
	// With --allow-daemons the scans also find the daemons to spare while
	// COMMAND runs, cgroup or not: a process is judged as first seen; with
	// --events, the escapees as they appear.
	if r.sys.strong() && !r.o.AllowDaemons && r.o.Events == nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	w := proc.NewWaker(r.log)
	if r.pid > 0 {
		w.Follow(r.pid)
	}
	go func() {
		defer close(stopped)
		defer w.Close()
		// The first scan comes trackFirst after the start: before, there
		// is only COMMAND, and a command that ends at once costs nothing.
		if !w.Wait(trackFirst, trackFirst, done) {
			return
		}
		d := trackFirst
		for {
			began := cpuTime()
			if _, added := r.scanAll(); len(added) > 0 {
				d = trackFirst
				for _, p := range added {
					w.Follow(p.PID)
				}
			} else {
				d = min(d*3/2, trackEvery)
			}
			// At most a tenth of a CPU, however many processes the
			// machine has and however fast COMMAND forks: the scan's
			// CPU time (a loaded machine stretches its wall time).
			least := trackShare * (cpuTime() - began)
			if !w.Wait(least, max(d, least), done) {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// scanAll updates the tracker and returns the live members and those it
// found for the first time. The guard is told of the members outside
// COMMAND's process group, once each: those in it the guard finds by the
// group.
func (r *runner) scanAll() (live, added []proc.Entry) {
	r.trackMu.Lock()
	listing := r.track.Listing()
	r.trackMu.Unlock()
	procs, err := r.procs.scan()
	if err != nil {
		r.log("cannot list processes: %v", err)
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	live, added = r.track.UpdateListed(listing, procs)
	r.emitJoined(live)
	r.reg.Touch() // contain still runs: reap's bound on what it could have seen
	if spared := r.track.Spared(); len(spared) > 0 {
		r.daemons.spare(spared)
	}
	r.rec.SawLive(len(live))
	r.lim.count(live)
	for _, p := range added {
		if err := r.reg.Member(p.PID, p.Start); err != nil {
			r.log("cannot write %d (%s) to the registry: %v", p.PID, p.Comm, err)
		}
	}
	if !r.guard.guarding() {
		return live, added
	}
	for _, p := range live {
		id := proc.ID{PID: p.PID, Start: p.Start}
		if p.Pgrp == r.pid || r.told[id] {
			continue
		}
		r.told[id] = true
		if err := r.guard.Member(p.PID, p.Start); err != nil {
			r.log("cannot tell the crash guard of %d (%s): %v", p.PID, p.Comm, err)
		}
	}
	return live, added
}

// members lists every live process of the group: what the tracker finds
// (with contain a subreaper, every process COMMAND started is a
// descendant of contain), and whatever else is in the cgroup.
func (r *runner) members() []member {
	live, _ := r.scanAll()
	var out []member
	seen := make(map[int]bool)
	for _, p := range live {
		out = append(out, member{pid: p.PID, comm: p.Comm, start: p.Start, entry: p})
		seen[p.PID] = true
	}
	for _, pid := range r.grp.procs() {
		if seen[pid] {
			continue
		}
		// In the cgroup, missed by the scan (its parent ended between the
		// listing and the reading): its identity is read now, and the
		// tracker keeps it, so that the next scan does not take it for
		// gone nor the close signal it twice.
		m := member{pid: pid}
		if e, ok := r.procs.entryOf(pid); ok {
			m = member{pid: pid, comm: e.Comm, start: e.Start, entry: e}
			r.trackMu.Lock()
			r.track.RememberAs(pid, e.Start, "cgroup")
			r.trackMu.Unlock()
		}
		out = append(out, m)
	}
	return out
}
