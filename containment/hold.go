//go:build linux || windows

package containment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/contain-cli/contain/tag"
)

// holder returns the Group's holder, started with its first command (nil
// when it found nothing to hold the session in: see holds): a
// copy of the program that runs contain's engine on a session of no
// COMMAND (run.Spec.Hold), guarded as contain run is, and closes it when
// the Group is closed or the program ends. Every command of the Group is
// of that session, tagged TOOL:PID with the holder's PID.
func (g *Group) holder() (*heldCopy, error) {
	g.holding.Lock()
	defer g.holding.Unlock()
	g.mu.Lock()
	h, closed := g.hold, g.closed
	g.mu.Unlock()
	if h != nil {
		select {
		case <-h.done:
			return nil, fmt.Errorf("%w: the copy that held its session ended (%s)", ErrClosed, endedHow(h))
		default:
			return h, nil
		}
	}
	if closed {
		return nil, ErrClosed
	}
	s := g.spec
	// The timeout is each command's, the program's to keep (timeOut).
	s.Hold, s.Env, s.Timeout, s.KillAfter = true, []string{}, 0, 0
	hc := exec.Command(g.exe)
	m, err := g.startCopy(hc, s, true)
	if err != nil {
		return nil, err
	}
	go func() {
		<-m.done
		hc.Wait()
		g.holderEnded()
	}()
	<-m.started
	if !m.held {
		<-m.done
		return nil, fmt.Errorf("containment: the copy that holds the group's session could not start (%s)", endedHow(m))
	}
	if !g.held.open(tag.Format(s.ToolOf(), hc.Process.Pid), m.in, hc.Process, g.o.Terminal) {
		// Nothing this program may start processes in holds the session
		// (no cgroup; a job it cannot reach): the holder closes its empty
		// session, and each command is held by a copy of its own (holds).
		g.noHold.Store(true)
		g.mu.Lock()
		g.members = slices.DeleteFunc(g.members, func(c *heldCopy) bool { return c == m })
		g.reports = slices.DeleteFunc(g.reports, func(c *heldCopy) bool { return c == m })
		g.mu.Unlock()
		m.stop.Close()
		return nil, nil
	}
	g.mu.Lock()
	g.hold = m
	g.mu.Unlock()
	return m, nil
}

// endedHow says how a copy ended, for an error.
func endedHow(m *heldCopy) string {
	switch {
	case m.outcome == nil:
		return "killed before it could say how"
	case m.outcome.Error != "":
		return m.outcome.Error
	}
	return "it closed the session"
}

// startHeld starts cmd in the Group's session (startIn): the holder's tag
// in its environment, in a process group of its own, born in the
// session's cgroup (Linux) or job (Windows). It is cmd.Start itself:
// cmd.Process is the command, cmd.Wait its own. held is false where the
// Group holds no session (each command then has a copy of its own).
func (g *Group) startHeld(cmd *exec.Cmd) (held bool, err error) {
	// Close waits for a start under way: what it starts is then in the
	// session when the holder closes it.
	g.starting.RLock()
	defer g.starting.RUnlock()
	// Close may have run between Start's look at closed and the lock:
	// the holder may have closed the session, and a command started now
	// would be no longer in it (TestCloseWhileStartingWindows saw one
	// outlive the holder's close, ended only when the job's last handle
	// closed).
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return true, ErrClosed
	}
	h, err := g.holder()
	if err != nil || h == nil {
		return err != nil, err
	}
	return true, g.startIn(h, cmd)
}

// heldEnd finishes Wait's ExitError e of a held command: the status of a
// timeout (124, or 137 where it was killed after it: killed), and what
// the session's end says (HolderEnded: the holder was killed, and its
// crash guard, or on Windows the job's closing, ended the session; Limit:
// the holder ended it for a limit). nil where nothing went wrong.
func (g *Group) heldEnd(e *ExitError, timedOut, killed bool) error {
	switch {
	case timedOut && killed:
		e.Status = 128 + int(syscall.SIGKILL)
	case timedOut:
		e.Status = timedOutStatus
	}
	select {
	case <-g.hold.done:
		o := g.hold.outcome
		e.HolderEnded = o == nil
		if o != nil {
			e.Limit = o.Limit
		}
	default:
	}
	if e.Status == 0 && !e.TimedOut && !e.HolderEnded && e.Limit == "" && e.Err == nil {
		return nil
	}
	return e
}

// timedOutStatus is GNU timeout's status when the timeout fired.
const timedOutStatus = 124

// waitError is what Wait keeps of cmd.Wait's error for a held command:
// not an exit status (the ExitError says it), nor the command's output
// held past WaitDelay by the session after the command ended (not the
// command's fault).
func waitError(werr error) error {
	if _, ok := werr.(*exec.ExitError); ok || errors.Is(werr, exec.ErrWaitDelay) {
		return nil
	}
	return werr
}

// heldStart readies cmd's start in the Group's session: its environment
// with the session's tag (and no daemon's mark), and a copy of its
// SysProcAttr, returned for the OS's start to add to. restore puts back
// cmd.Env and cmd.SysProcAttr as the program set them.
func (g *Group) heldStart(cmd *exec.Cmd) (attr *syscall.SysProcAttr, restore func()) {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = tag.SetEnv(tag.SetEnv(env, tag.Var, g.held.tag), tag.DaemonVar, "")
	attr = &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	env0, attr0 := cmd.Env, cmd.SysProcAttr
	cmd.Env, cmd.SysProcAttr = env, attr
	return attr, func() { cmd.Env, cmd.SysProcAttr = env0, attr0 }
}

// admit keeps c, just started in h's session, for Wait, with its
// timeout's timer (timeOut) where Options.Timeout asks for one: unless
// the holder ended while it started, when its session is closed and the
// command, which would outlive it, is killed.
func (g *Group) admit(h *heldCopy, cmd *exec.Cmd, c *command, timeOut func()) error {
	select {
	case <-h.done:
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("%w: the copy that held its session ended (%s)", ErrClosed, endedHow(h))
	default:
	}
	if g.o.Timeout > 0 {
		c.timer = time.AfterFunc(g.o.Timeout, timeOut)
	}
	g.mu.Lock()
	g.cmds[cmd] = c
	g.mu.Unlock()
	return nil
}

// end marks c ended once Wait has seen it end, and stops its timers:
// from then on they send nothing (its PID, or its group's, may be
// another's).
func (c *command) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	for _, t := range []*time.Timer{c.timer, c.killer} {
		if t != nil {
			t.Stop()
		}
	}
}
