package containment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/job"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
)

// holds reports whether this Group holds its commands in one session
// held by one copy of the program, the program starting each command
// itself: on Windows always, the session being the holder's job object,
// kill on close, which the program holds a handle to (a duplicate of the
// holder's), and starts each command into before it runs. Should the
// holder give no job the program can reach, each command is held by a
// copy of its own (noHold).
func (g *Group) holds() bool { return !g.noHold.Load() }

// command is one command a Group started in its holder's session: its
// PID (also its console process group), a handle to it (which keeps its
// PID from being taken again until Wait), and its timeout's state. mu
// guards the timers' acts against Wait: once Wait has seen the command
// end (ended), they do nothing.
type command struct {
	pid int
	h   windows.Handle

	mu          sync.Mutex
	ended       bool
	timedOut    bool
	killedAfter bool
	timer       *time.Timer
	killer      *time.Timer
}

// heldAttrs is what every command of a Group's session starts with on
// Windows: the holder's tag, and the session's job (nil once closed).
type heldAttrs struct {
	tag string
	mu  sync.Mutex
	job *job.Job
}

// open readies the attributes once the holder holds the session: its
// job's handle in the holder (in, decimal) is duplicated into this
// process through the holder's own handle. It reports whether the
// commands can start in it.
func (a *heldAttrs) open(tag, in string, holder *os.Process, _ bool) bool {
	a.tag = tag
	v, err := strconv.ParseUint(in, 10, 64)
	if err != nil || v == 0 {
		return false
	}
	var h windows.Handle
	holder.WithHandle(func(ph uintptr) {
		err = windows.DuplicateHandle(windows.Handle(ph), windows.Handle(v), windows.CurrentProcess(), &h, 0, false, windows.DUPLICATE_SAME_ACCESS)
	})
	if err != nil {
		return false
	}
	a.mu.Lock()
	a.job = job.Adopt(h)
	a.mu.Unlock()
	return true
}

// close lets go of the program's handle to the job, once: should the
// holder have ended without closing its session (killed), this is the
// last handle, and the job, kill on close, ends every command with it.
func (a *heldAttrs) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.job != nil {
		a.job.Close()
		a.job = nil
	}
}

// holderEnded closes the program's handle to the job when the holder
// has ended: killed, its own handle went with it, and this one is the
// last. A start under way finishes first (its command is then in the
// job when it ends).
func (g *Group) holderEnded() {
	g.starting.Lock()
	defer g.starting.Unlock()
	g.held.close()
}

// startIn starts cmd in h's session: the tag in its environment, in a
// console process group of its own, and started suspended, put into the
// job and only then let run (job.Start): no instruction of it runs
// outside the session.
func (g *Group) startIn(h *heldCopy, cmd *exec.Cmd) error {
	_, restore := g.heldStart(cmd)
	g.held.mu.Lock()
	j := g.held.job
	var ph windows.Handle
	err := ErrClosed
	if j != nil {
		ph, err = j.Start(cmd, g.logf)
	}
	g.held.mu.Unlock()
	restore()
	var se *job.StartError
	switch {
	case errors.As(err, &se):
		return se.Err // os/exec's own
	case errors.Is(err, ErrClosed):
		return fmt.Errorf("%w: the copy that held its session ended (%s)", ErrClosed, endedHow(h))
	case err != nil:
		return fmt.Errorf("containment: %w", err)
	}
	c := &command{pid: cmd.Process.Pid, h: ph}
	if err := g.admit(h, cmd, c, func() { g.timeOut(c) }); err != nil {
		windows.CloseHandle(ph)
		return err
	}
	return nil
}

// logf says a line of the library's on Options.Log.
func (g *Group) logf(format string, a ...any) {
	if g.o.Log != nil {
		text.Fprintf(g.o.Log, "containment: "+format+"\n", a...)
	}
}

// timeOut is Options.Timeout for one command, as contain run's on
// Windows: Signal as Windows has it (SIGINT a CTRL_C_EVENT, SIGKILL a
// termination, any other a CTRL_BREAK_EVENT) to the command's console
// process group, the command terminated where the event cannot be sent
// (it counts as ended by the timeout's signal: 124); terminated
// KillAfter later (137).
func (g *Group) timeOut(c *command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || !running(c.h) {
		return
	}
	c.timedOut = true
	switch sig := g.spec.Signal; sig {
	case 0:
	case syscall.SIGKILL:
		c.killedAfter = true
		windows.TerminateProcess(c.h, proc.TerminateCode)
	default:
		ev := uint32(windows.CTRL_BREAK_EVENT)
		if sig == syscall.SIGINT {
			ev = windows.CTRL_C_EVENT
		}
		// The command runs, so its group (its PID) names a group.
		if err := windows.GenerateConsoleCtrlEvent(ev, uint32(c.pid)); err != nil {
			g.logf("timeout: cannot send a console event to %d (%v): terminating it", c.pid, err)
			windows.TerminateProcess(c.h, proc.TerminateCode)
		}
	}
	if g.o.KillAfter > 0 {
		c.killer = time.AfterFunc(g.o.KillAfter, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.ended && running(c.h) {
				c.killedAfter = true
				windows.TerminateProcess(c.h, proc.TerminateCode)
			}
		})
	}
}

// running reports whether process h has not ended.
func running(h windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// waitHeld is Group.Wait of a command started in the holder's session:
// cmd.Wait, then what the command started that is still in the session
// (its descendants in the job, endTree) gets CTRL_BREAK_EVENT where it
// is in the command's console process group, and is terminated after
// the grace period. On Windows a process keeps its parent's PID when
// the parent ends, so the command's tree is known after its end, a
// detached grandchild included, as long as the processes between are
// alive; one whose chain broke (an intermediate ended) is the session's,
// ended when the Group is closed or the program ends.
func (g *Group) waitHeld(cmd *exec.Cmd, c *command) error {
	if cmd.WaitDelay == 0 {
		// A process of the session that holds the command's output would
		// hold cmd.Wait until Close: it is let go of a grace period after
		// the command ended.
		cmd.WaitDelay = max(g.spec.Grace, time.Millisecond)
	}
	werr := cmd.Wait()
	c.end()
	g.endTree(c)
	windows.CloseHandle(c.h)
	werr = waitError(werr)
	st := cmd.ProcessState
	if st == nil {
		return werr
	}
	code := st.ExitCode()
	e := &ExitError{Pid: c.pid, Status: code, Exited: true, Code: code, ProcessState: st, TimedOut: c.timedOut, Err: werr}
	return g.heldEnd(e, c.timedOut, c.killedAfter)
}

// giveUp bounds the terminations endTree tries after the grace period:
// what is still there then ends with the session.
const giveUp = 5 * time.Second

// endTree ends what is left of the command c's tree in the session's
// job: CTRL_BREAK_EVENT to the command's console process group where a
// process of the tree is in it (Wine shows no process groups: none is),
// then, after the grace period (at once where no event was sent), each
// one still there is terminated through a handle that shows it in the
// job with the creation time it was found with, so that a PID taken
// again is never touched.
func (g *Group) endTree(c *command) {
	g.held.mu.Lock()
	j := g.held.job
	g.held.mu.Unlock()
	root, _, err := proc.CreationTime(c.h)
	if j == nil || err != nil {
		return
	}
	left := treeIn(j, c.pid, root)
	if len(left) == 0 {
		return
	}
	deadline := time.Now()
	for _, p := range left {
		if gid, err := proc.ProcessGroup(p.PID); err == nil && gid == uint32(c.pid) {
			// A live process is in it: the PID names a group.
			if windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, gid) == nil {
				deadline = deadline.Add(g.spec.Grace)
			}
			break
		}
	}
	for d := time.Millisecond; len(left) > 0 && time.Since(deadline) < giveUp; d = min(d*2, 50*time.Millisecond) {
		if !time.Now().Before(deadline) {
			for _, p := range left {
				terminateIn(j, p)
			}
		}
		time.Sleep(d)
		left = treeIn(j, c.pid, root)
	}
}

// terminateIn terminates p if it is still that process, in j.
func terminateIn(j *job.Job, p proc.ID) {
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_INFORMATION|windows.SYNCHRONIZE, false, uint32(p.PID))
	if err != nil {
		return
	}
	defer windows.CloseHandle(h)
	start, exited, err := proc.CreationTime(h)
	if in, _ := j.Holds(h); in && err == nil && !exited && start == p.Start {
		windows.TerminateProcess(h, proc.TerminateCode)
	}
}

// treeIn lists the live processes of j descended from root (created at
// start), by their parent links through processes of the job, each
// created no earlier than its parent (a link to a PID taken again by a
// younger process is no link).
func treeIn(j *job.Job, root int, start uint64) []proc.ID {
	parents, err := proc.Parents()
	if err != nil {
		return nil
	}
	members := map[int]uint64{}
	for _, pid := range j.PIDs() {
		h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
		if err != nil {
			continue
		}
		if t, exited, err := proc.CreationTime(h); err == nil && !exited {
			members[pid] = t
		}
		windows.CloseHandle(h)
	}
	in := map[int]uint64{root: start}
	var out []proc.ID
	for grown := true; grown; {
		grown = false
		for pid, t := range members {
			if _, ok := in[pid]; ok {
				continue
			}
			if pt, ok := in[parents[pid]]; ok && t >= pt {
				in[pid] = t
				out = append(out, proc.ID{PID: pid, Start: t})
				grown = true
			}
		}
	}
	return out
}
