package containment

import (
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
)

// holds reports whether this Group holds its commands in one session
// held by one copy of the program, the program starting each command
// itself (held_*.go): where the kernel holds that session, a cgroup the
// program may start processes in (cgroupWritable: root outside a user
// namespace, or a user in a cgroup delegated to it).
// Elsewhere each command is held by a copy of its own, as contain run
// holds COMMAND, with the shim, a subreaper, where no cgroup is: the
// commands are no descendants of a holder, and the tracking alone does
// not follow a daemon's double fork (redis, nginx, ssh-agent, gpg-agent
// as nobody: TestLibraryRealDaemons).
func (g *Group) holds() bool { return !g.noHold.Load() && mayHold() }

// mayHold is cgroupWritable, asked once: as the program runs when it
// first starts a command.
var mayHold = sync.OnceValue(cgroupWritable)

// command is one command a Group started in its holder's session: its
// PID (also its process group), and its timeout's state. mu guards the
// timers' acts against Wait: once Wait has seen the command end (ended),
// they send nothing, since its process group may then be anyone's.
type command struct {
	pid      int
	terminal bool // it was given the terminal, taken back at its end
	// found: the terminal's settings when it was given the terminal,
	// put back when a signal ended it (nil: none to put back).
	found *unix.Termios

	mu          sync.Mutex
	ended       bool
	timedOut    bool
	killedAfter bool
	timer       *time.Timer
	killer      *time.Timer
}

// startIn starts cmd in h's session.
func (g *Group) startIn(h *heldCopy, cmd *exec.Cmd) error {
	attr, restore := g.heldStart(cmd)
	if !attr.Setsid {
		attr.Setpgid, attr.Pgid = true, 0
	}
	terminal := g.o.Terminal && !attr.Setsid && g.held.giveTerminal(attr)
	var found *unix.Termios
	if terminal {
		found = g.held.settings()
	}
	g.held.add(attr)
	err := g.held.start(cmd)
	restore()
	if err != nil {
		if terminal {
			g.held.takeTerminal()
		}
		return err
	}
	c := &command{pid: cmd.Process.Pid, terminal: terminal, found: found}
	// Born outside the session's cgroup (cmd.SysProcAttr asked for a
	// cgroup of its own), it is told to the holder, which keeps it
	// whatever its environment shows from now on (a title written over
	// it, an env -i) and looks beyond the cgroup when it closes: read
	// before anything can reap it, its start time names it. One frame is
	// one write, whole in the pipe whoever else writes. In the cgroup,
	// the cgroup holds it.
	if attr.CgroupFD != g.held.cgfd || !attr.UseCgroupFD {
		if start := proc.StartOf(c.pid); start != 0 {
			nosigpipe.Pipe(h.stop).Write(memberFrame(proc.ID{PID: c.pid, Start: start}))
		}
	}
	return g.admit(h, cmd, c, func() { g.timeOut(cmd, c) })
}

// timeOut is Options.Timeout for one command, as GNU timeout's: Signal
// to the command and its process group (and SIGCONT, so that a stopped
// one acts on it), SIGKILL KillAfter later.
func (g *Group) timeOut(cmd *exec.Cmd, c *command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.timedOut = true
	if sig := g.spec.Signal; sig != 0 {
		signalCommand(cmd, c, sig)
		if sig != syscall.SIGKILL && sig != syscall.SIGCONT {
			signalCommand(cmd, c, syscall.SIGCONT)
		}
	}
	if g.o.KillAfter > 0 {
		c.killer = time.AfterFunc(g.o.KillAfter, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.ended {
				c.killedAfter = true
				signalCommand(cmd, c, syscall.SIGKILL)
			}
		})
	}
}

// signalCommand sends sig to the command and its process group while
// it is not reaped (its process group is its own until then); c.mu is
// held. The command itself goes through cmd.Process, which knows whether
// it was reaped (cmd.Wait called by the program, not Group.Wait): then
// nothing is sent.
func signalCommand(cmd *exec.Cmd, c *command, sig syscall.Signal) {
	if cmd.Process.Signal(sig) != nil {
		return
	}
	unix.Kill(-c.pid, sig)
}

// waitHeld is Group.Wait of a command started in the holder's session:
// once the command has ended, and while its end, not yet reaped, keeps
// its process group its own, SIGTERM (and SIGCONT) to what it left in
// its process group; then cmd.Wait; then what is still in that group gets
// SIGKILL after the grace period. What the command started outside its
// process group (setsid, a double fork) is the session's, ended when the
// Group is closed or the program ends.
func (g *Group) waitHeld(cmd *exec.Cmd, c *command) error {
	ended := waitEnded(c.pid)
	end := startNow()
	c.end()
	if c.terminal {
		g.held.takeTerminal()
	}
	if ended {
		unix.Kill(-c.pid, syscall.SIGTERM)
		unix.Kill(-c.pid, syscall.SIGCONT)
	}
	if cmd.WaitDelay == 0 {
		// A process that left the command's process group (setsid) and
		// holds its output would hold cmd.Wait until Close: it is let go
		// of a grace period after the command ended.
		cmd.WaitDelay = max(g.spec.Grace, time.Millisecond)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	werr := g.endLeftInGroup(c.pid, end, ended, waited)
	werr = waitError(werr)
	st := cmd.ProcessState
	if st == nil {
		return werr
	}
	e := &ExitError{Pid: c.pid, Status: st.ExitCode(), ProcessState: st, TimedOut: c.timedOut, Err: werr}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			e.Exited, e.Code, e.Status = true, ws.ExitStatus(), ws.ExitStatus()
		case ws.Signaled():
			e.Signal, e.Status = ws.Signal(), 128+int(ws.Signal())
		}
	}
	if c.found != nil && (c.timedOut || e.Signal != 0) {
		// As contain run does: a command the timeout or a signal ended
		// leaves the terminal as it was given; one that exited of itself,
		// as it chose.
		g.held.putBack(c.found)
	}
	return g.heldEnd(e, c.timedOut, c.killedAfter || e.Signal == syscall.SIGKILL)
}

// endLeftInGroup waits for cmd.Wait (waited) and for the command's
// process group (pgrp, the command ended at end, in start-time units) to
// be empty, and SIGKILLs what is left of it after the grace period. Once
// the command is reaped a process group of its PID may be a stranger's
// (the PID taken again, which takes the whole PID space going round);
// what is signalled then is read from a scan, by process group and by a
// start no later than the command's end. ended: the command's end was
// seen here (else the program reaped it first, and nothing is sent).
// It returns cmd.Wait's error.
func (g *Group) endLeftInGroup(pgrp int, end uint64, ended bool, waited <-chan error) error {
	var werr error
	got := false
	// Most commands leave nothing: cmd.Wait returns as soon as the
	// output is read to its end.
	t := time.NewTimer(5 * time.Millisecond)
	select {
	case werr = <-waited:
		got = true
		t.Stop()
	case <-t.C:
	}
	if !ended || got && unix.Kill(-pgrp, 0) == unix.ESRCH {
		if !got {
			werr = <-waited
		}
		return werr
	}
	deadline := time.Now().Add(g.spec.Grace)
	for d := time.Millisecond; ; d = min(d*2, 50*time.Millisecond) {
		left := leftInGroup(pgrp, end)
		if len(left) == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			// Each pass: one forked meanwhile is killed at the next.
			for _, p := range left {
				proc.SignalMember(p.PID, p.Start, syscall.SIGKILL, nil)
			}
		}
		t := time.NewTimer(d)
		select {
		case werr = <-waited:
			got = true
			waited = nil
			t.Stop()
		case <-t.C:
		}
	}
	if !got {
		werr = <-waited
	}
	return werr
}

// leftInGroup lists the live processes of process group pgrp that
// started no later than end.
func leftInGroup(pgrp int, end uint64) []proc.Entry {
	all, err := proc.Scan()
	if err != nil {
		return nil
	}
	var out []proc.Entry
	for _, p := range all {
		if p.Pgrp == pgrp && !p.Zombie && p.Start <= end {
			out = append(out, p)
		}
	}
	return out
}
