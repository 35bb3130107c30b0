package run

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/shim"
	"github.com/contain-cli/contain/internal/signals"
)

// shimLink is the shim COMMAND runs under (a *shim.Client: internal/shim
// starts it, briefs it and reads its records), or noShim where COMMAND
// runs under none: the runner asks it, never whether it is there.
type shimLink interface {
	PID() int // 0: none
	ID() proc.ID
	Relay(to shim.Receiver)
	Watch(command int, found func(proc.Entry))
	CommandEnded() bool
	Spare(pid int, start uint64) error
	ReapedCPU() time.Duration
	Kill()
	Marker() uint64
}

var _ shimLink = (*shim.Client)(nil)

// noShim is no shim: it holds nothing, reaps nothing, says nothing.
type noShim struct{}

func (noShim) PID() int                    { return 0 }
func (noShim) Marker() uint64              { return 0 }
func (noShim) ID() proc.ID                 { return proc.ID{} }
func (noShim) Relay(shim.Receiver)         {}
func (noShim) Watch(int, func(proc.Entry)) {}
func (noShim) CommandEnded() bool          { return true }
func (noShim) Spare(int, uint64) error     { return nil }
func (noShim) ReapedCPU() time.Duration    { return 0 }
func (noShim) Kill()                       {}

// preparedOS is the shim that PrepareRun started, for a user who has no
// cgroup (likely: not root), so that its start overlaps with contain's
// own; nil when none was started or a run took it.
type preparedOS struct {
	shim    *shim.Client
	shimErr error
}

// prepareShim starts the shim early where it will most likely be needed:
// an ordinary user, whose contain can seldom make a cgroup. It runs on
// the main thread (PrepareRun's), whose children contain's reaper waits
// for: fork and exec are all it waits for here, the shim's own start-up
// runs beside contain's.
func (p *Prepared) prepareShim() {
	if os.Geteuid() == 0 || layers.Disabled("shim") || shim.KeeperAvailable() {
		return
	}
	p.shim, p.shimErr = shim.Fork()
}

// takeShim hands the early shim (or why there is none) to one run.
func (p *Prepared) takeShim() (*shim.Client, error) {
	if p == nil {
		return nil, nil
	}
	s, err := p.shim, p.shimErr
	p.shim, p.shimErr = nil, nil
	return s, err
}

// dropShim ends the early shim if no run took it (a cgroup was made,
// --detach, a bad option): EOF before any orders, and it exits.
func (p *Prepared) dropShim() {
	if s, _ := p.takeShim(); s != nil {
		s.Drop()
	}
}

// shimPID is the early shim's PID; 0: none.
func (p *Prepared) shimPID() int {
	if p == nil || p.shim == nil {
		return 0
	}
	return p.shim.PID()
}

// startShim has a shim start COMMAND (shim.Start: the built-in keeper,
// or else the early shim or one started now). It returns once COMMAND
// runs, or with its start error.
func (sys *linuxOS) startShim(path string, foreground bool) error {
	r := sys.r
	var pdeath syscall.Signal
	switch {
	case layers.Disabled("pdeathsig"):
	case r.guard.guarding():
		pdeath = r.o.Signal
	default:
		pdeath = syscall.SIGKILL
	}
	o := shim.Orders{Path: path, Argv: r.o.Args, Env: r.o.Env, Foreground: foreground,
		Pdeathsig: int(pdeath), Signal: int(r.o.Signal), Tag: r.o.Tag, Grace: r.o.Grace, Verbose: r.o.Log != nil,
		AllowDaemons: r.o.AllowDaemons}
	if r.o.Report != "" {
		o.Report = &guard.ReportOrder{Path: r.o.Report, Command: r.o.Args, Started: time.Now()}
	}
	// The guard learns of each shim before COMMAND can run: should
	// contain die at once, the shim, not the guard, gives COMMAND its -s
	// signal and closes the group, and the guard waits for it. (Told
	// later, the guard stopped and sent SIGTERM to a COMMAND that had
	// just started, 1 round in 80 with the CPUs busy.)
	tell := func(s *shim.Client) {
		if err := r.guard.Shim(s.PID(), s.ID().Start); err != nil {
			r.log("cannot tell the crash guard of the shim: %v", err)
		}
	}
	// Started on the main goroutine, which stays on the main thread
	// (PrepareRun), whose children contain's reaper waits for.
	s, pid, err := shim.Start(o, r.o.Prepared.takeShim, tell, r.log)
	if s != nil {
		r.shim = s
	}
	var ee *shim.ExecError
	switch {
	case errors.As(err, &ee):
		return &StartError{Name: r.o.Args[0], Err: ee.Errno}
	case err != nil:
		return err
	}
	r.pid = pid
	r.jc.started(foreground)
	return nil
}

// shimEnded reports whether wpid, just reaped, was the shim, and handles
// its end. Had it not said that COMMAND ended (it was killed), COMMAND got
// its Pdeathsig and, contain being a subreaper, is contain's child now,
// and contain's reaper sees it end; otherwise contain could never know
// how it ended.
//
// A shim that ends before COMMAND is a containment failure: what it held
// in its subtree (every orphan of the session) is re-parented out of it,
// to contain where contain is a subreaper, else to PID 1. From then on
// contain holds the session as on macOS: its tracking (what its scans
// saw, COMMAND's process group, the tag) finds what can still be found,
// and the close ends that; it says so on stderr, in -v and in the report.
func (sys *linuxOS) shimEnded(wpid int, ws unix.WaitStatus) bool {
	r := sys.r
	if wpid != r.shim.PID() {
		return false
	}
	if r.shim.CommandEnded() {
		return true
	}
	sys.shimLost = true
	what := fmt.Sprintf("the shim (PID %d) ended (%s) before COMMAND did: containment is broken; ending what contain's tracking, the tag and COMMAND's process group still find", wpid, describeStatus(ws))
	if sys.subreaper {
		what = fmt.Sprintf("the shim (PID %d) ended (%s) before COMMAND did: contain, a subreaper, holds its orphans while it lives, but should contain be killed only the crash guard's scans find them", wpid, describeStatus(ws))
	}
	r.containmentFailed(what)
	if ppid, err := proc.ParentOf(r.pid); err == nil && ppid == r.self {
		return true
	}
	r.log("COMMAND %d is no child of contain: its status is lost", r.pid)
	r.events <- waitEvent{status: unix.WaitStatus(unix.SIGKILL)}
	return true
}

// describeStatus is a wait status for people.
func describeStatus(ws unix.WaitStatus) string {
	switch {
	case ws.Signaled():
		return "killed by " + signals.Name(ws.Signal())
	case ws.Exited():
		return fmt.Sprintf("exit %d", ws.ExitStatus())
	}
	return fmt.Sprintf("status %#x", int(ws))
}

// adopted makes e, a child of the shim, a member and writes it to the
// registry. With --allow-daemons it is only written: the tracker judges
// a process when it first finds it, and a daemon it spares is written
// again as spared, which reap takes for a daemon.
func (sys *linuxOS) adopted(e proc.Entry) {
	r := sys.r
	id := proc.ID{PID: e.PID, Start: e.Start}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	if r.track.IsMember(id) || r.track.Released(id) || r.track.Skip[e.PID] {
		return // written when the tracker found it, or none of the session's
	}
	if !r.o.AllowDaemons {
		r.track.RememberAs(e.PID, e.Start, "descendant")
	}
	if err := r.reg.Member(e.PID, e.Start); err != nil {
		r.log("cannot write %d to the registry: %v", e.PID, err)
	}
}
