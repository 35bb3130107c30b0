package run

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
)

// ShimCommand is argv[1] of the shim: contain itself, run again.
const ShimCommand = "__shim"

// The shim closes the crash hole that scans leave where there is no
// cgroup (ordinary users, CONTAIN_DISABLE=cgroup). It is a small
// subreaper between contain and COMMAND, as tini -s and catatonit sit
// above their child: every process COMMAND starts stays in its subtree
// whatever it does (fork, setsid, lose its parent), because an orphan is
// re-parented to its nearest living subreaper ancestor, and the shim is
// one for as long as it lives. When contain is killed, the shim lives on
// (its own process group, every forwarded signal caught and dropped), and walking
// its subtree finds every process of the session with no window: nothing
// depends on a scan having seen a process before contain died.
//
// While contain lives the shim only relays: it starts COMMAND as contain
// asked, tells contain COMMAND's PID, its stops and its end, and how each
// other process it reaped ended, and exits once it has no child left, that
// is when nothing of the session is left. contain closes the group as
// without it; the shim's exit is what tells contain that the group is
// empty. When contain dies first (EOF on its pipe), the shim does what the
// crash guard does, from the top of the tree: COMMAND gets the timeout
// signal (-s), every other process SIGTERM, SIGKILL after the grace period
// (at most guard.Grace), and the shim writes the guard's report.
//
// Its descriptors: 0-2 contain's (COMMAND's), 3 the orders (JSON, then
// EOF when contain ends), 4 the shim's reports to contain. When COMMAND is
// to be the terminal's foreground job, the shim opens the terminal
// itself: it is in contain's session.
const (
	shimOrdersFd = 3
	shimStatusFd = 4
)

// shimOrders is what contain tells the shim, as one line of JSON.
type shimOrders struct {
	Path       string             `json:"path"`
	Argv       []string           `json:"argv"`
	Env        []string           `json:"env"`
	Foreground bool               `json:"foreground"`
	Pdeathsig  int                `json:"pdeathsig"` // COMMAND's, should the shim die
	Signal     int                `json:"signal"`    // COMMAND's when contain dies (-s)
	Tag        string             `json:"tag"`
	Grace      time.Duration      `json:"grace"`
	Verbose    bool               `json:"verbose"`
	Report     *guard.ReportOrder `json:"report,omitempty"`
	// AllowDaemons: contain may release daemons (lines "release PID
	// START" after this one); the shim then exits once only they are
	// left of its children, rather than wait for them.
	AllowDaemons bool `json:"allow_daemons,omitempty"`
}

// shimRelease is contain's line that a daemon left the session.
const shimRelease = "release"

// The shim's lines to contain.
const (
	shimStarted = "start"  // start PID: COMMAND runs
	shimFailed  = "error"  // error ERRNO: COMMAND could not be started
	shimStopped = "stop"   // stop STATUS: COMMAND stopped
	shimExited  = "exit"   // exit STATUS MORE: COMMAND ended; MORE 1: other processes live
	shimReaped  = "reaped" // reaped PID STATUS: another process of the session ended
)

// shim is what contain holds of a running shim.
type shim struct {
	pid    int
	start  uint64
	orders *os.File // contain's end: its EOF tells the shim that contain ended
	status *os.File
	lines  *bufio.Reader
	done   chan struct{} // closed when every line of the shim was read
	exited bool          // it said that COMMAND ended
}

// preparedOS is the shim that PrepareRun started, for a user who has no
// cgroup (likely: not root), so that its start overlaps with contain's
// own; nil when none was started or a run took it.
type preparedOS struct {
	shim    *shim
	shimErr error
}

// prepareShim starts the shim early where it will most likely be needed:
// an ordinary user, whose contain can seldom make a cgroup. It runs on
// the main thread (PrepareRun's), whose children contain's reaper waits
// for: fork and exec are all it waits for here, the shim's own start-up
// runs beside contain's.
func (p *Prepared) prepareShim() {
	if os.Geteuid() == 0 || disabledLayer("shim") {
		return
	}
	p.shim, p.shimErr = forkShim()
}

// dropShim ends the early shim if no run took it (a cgroup was made,
// --detach, a bad option): EOF before any orders, and it exits.
func (p *Prepared) dropShim() {
	if p == nil || p.shim == nil {
		return
	}
	s := p.shim
	p.shim, p.shimErr = nil, nil
	s.orders.Close()
	s.status.Close()
	for {
		if _, err := unix.Wait4(s.pid, nil, 0, nil); err != unix.EINTR {
			return
		}
	}
}

// forkShim starts a shim, which waits for its orders.
func forkShim() (*shim, error) {
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer or.Close()
	sr, sw, err := os.Pipe()
	if err != nil {
		ow.Close()
		return nil, err
	}
	defer sw.Close()
	nosigpipe.Quiet(ow)
	// The shim runs the binary that runs now (/proc/self/exe in the child
	// is contain's: an upgrade may have replaced the file since), with
	// contain's own environment, not COMMAND's: it is no member of the
	// session and carries no tag. Its own process group: a kill of
	// contain's group spares it, as it spares COMMAND.
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"contain", ShimCommand},
		&syscall.ProcAttr{Env: append(os.Environ(), "GOMAXPROCS=1"), Files: []uintptr{0, 1, 2, or.Fd(), sw.Fd()},
			Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		ow.Close()
		sr.Close()
		return nil, err
	}
	return &shim{pid: pid, start: proc.StartOf(pid), orders: ow, status: sr, lines: bufio.NewReader(sr), done: make(chan struct{})}, nil
}

// startShim has the shim (the early one, or one started now) start
// COMMAND; it returns once COMMAND runs, or with its start error.
func (r *runner) startShim(path string, foreground bool) error {
	var s *shim
	var err error
	if p := r.o.Prepared; p != nil {
		s, err = p.shim, p.shimErr
		p.shim, p.shimErr = nil, nil
	}
	if s == nil || err != nil {
		if s, err = forkShim(); err != nil {
			return err
		}
	}
	r.shim = s
	// The guard learns of the shim before COMMAND can run: should contain
	// die at once, the shim, not the guard, gives COMMAND its -s signal
	// and closes the group, and the guard waits for it. (Told later, the
	// guard stopped and sent SIGTERM to a COMMAND that had just started,
	// 1 round in 80 with the CPUs busy.)
	if r.guard != nil {
		if err := r.guard.Shim(s.pid, s.start); err != nil {
			r.log("cannot tell the crash guard of the shim: %v", err)
		}
	}
	pdeath := syscall.SIGKILL
	if r.guard != nil {
		pdeath = r.o.Signal
	}
	o := shimOrders{Path: path, Argv: r.o.Args, Env: r.o.Env, Foreground: foreground,
		Pdeathsig: int(pdeath), Signal: int(r.o.Signal), Tag: r.o.Tag, Grace: r.o.Grace, Verbose: r.o.Log != nil,
		AllowDaemons: r.o.AllowDaemons}
	if r.o.Report != "" {
		o.Report = &guard.ReportOrder{Path: r.o.Report, Command: r.o.Args, Started: time.Now()}
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if _, err := nosigpipe.Writer(s.orders).Write(append(b, '\n')); err != nil {
		return fmt.Errorf("cannot brief the shim: %w", err)
	}
	line, err := s.lines.ReadString('\n')
	f := strings.Fields(line)
	switch {
	case err != nil:
		return fmt.Errorf("the shim ended before starting COMMAND: %v", err)
	case len(f) == 2 && f[0] == shimFailed:
		n, _ := strconv.Atoi(f[1])
		return &StartError{Name: r.o.Args[0], Err: syscall.Errno(n)}
	case len(f) == 2 && f[0] == shimStarted:
		r.pid, _ = strconv.Atoi(f[1])
		r.gaveTTY = foreground
		return nil
	}
	return fmt.Errorf("the shim said %q", line)
}

// relay turns the shim's lines into what contain's reaper would have seen
// had COMMAND been its child: COMMAND's stops and end go to the main loop,
// the others' ends to the report.
func (r *runner) relay() {
	s := r.shim
	defer close(s.done)
	for {
		line, err := s.lines.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch {
		case f[0] == shimStopped:
			r.events <- waitEvent{status: unix.WaitStatus(n)}
		case f[0] == shimExited && len(f) == 3:
			s.exited = true
			r.events <- waitEvent{status: unix.WaitStatus(n), more: f[2] == "1"}
		case f[0] == shimReaped && len(f) == 3:
			ws, _ := strconv.Atoi(f[2])
			r.reapedOne(n, unix.WaitStatus(ws), nil)
		}
	}
}

// shimGone is called when contain reaped the shim. Had it not said that
// COMMAND ended (it was killed), COMMAND got its Pdeathsig and, contain
// being a subreaper, is contain's child now, and contain's reaper sees it
// end; otherwise contain could never know how it ended.
//
// A shim that ends before COMMAND is a containment failure: what it held
// in its subtree (every orphan of the session) is re-parented out of it,
// to contain where contain is a subreaper, else to PID 1. From then on
// contain holds the session as on macOS: its tracking (what its scans
// saw, COMMAND's process group, the tag) finds what can still be found,
// and the close ends that; it says so on stderr, in -v and in the report.
func (r *runner) shimGone(ws unix.WaitStatus) {
	<-r.shim.done
	if r.shim.exited {
		return
	}
	r.shimLost = true
	what := fmt.Sprintf("the shim (PID %d) ended (%s) before COMMAND did: containment is broken; ending what contain's tracking, the tag and COMMAND's process group still find", r.shim.pid, describeStatus(ws))
	if r.subreaper {
		what = fmt.Sprintf("the shim (PID %d) ended (%s) before COMMAND did: contain, a subreaper, holds its orphans while it lives, but should contain be killed only the crash guard's scans find them", r.shim.pid, describeStatus(ws))
	}
	r.containmentFailed(what)
	if ppid, err := proc.ParentOf(r.pid); err == nil && ppid == r.self {
		return
	}
	r.log("COMMAND %d is no child of contain: its status is lost", r.pid)
	r.events <- waitEvent{status: unix.WaitStatus(unix.SIGKILL)}
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

// ShimMain is the shim's main. It returns its exit status.
func ShimMain(args []string) int {
	var st unix.Stat_t
	if len(args) != 0 || unix.Fstat(shimOrdersFd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		fmt.Fprintln(os.Stderr, "contain: the shim is started by contain run, not by hand")
		return 2
	}
	// Nothing of this reaches COMMAND but what the orders say.
	for _, fd := range []int{shimOrdersFd, shimStatusFd} {
		unix.CloseOnExec(fd)
	}
	runtime.LockOSThread() // COMMAND's Pdeathsig follows the thread that forks it
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "contain: shim: cannot become a child subreaper: %v\n", err)
		return 125
	}
	in := bufio.NewReader(os.NewFile(shimOrdersFd, "orders"))
	out := os.NewFile(shimStatusFd, "status")
	line, err := in.ReadString('\n')
	var o shimOrders
	if err == nil {
		err = json.Unmarshal([]byte(line), &o)
	}
	if err != nil {
		return 0 // contain ended before it said what to run
	}
	containPID := os.Getppid()
	s := &shimRun{o: o, out: out, self: os.Getpid(), statuses: map[int]unix.WaitStatus{}}
	if o.Verbose {
		s.log = func(format string, a ...any) {
			fmt.Fprintf(nosigpipe.Stderr(), "contain[%d]: shim: "+format+"\n", append([]any{containPID}, a...)...)
		}
	} else {
		s.log = nopLog
	}
	if err := s.start(); err != nil {
		errno := syscall.EINVAL
		errors.As(err, &errno)
		fmt.Fprintf(out, "%s %d\n", shimFailed, int(errno))
		return 0
	}
	fmt.Fprintf(out, "%s %d\n", shimStarted, s.cmd)
	// From now on nothing but SIGKILL ends the shim: not the signals
	// contain forwards (an outer contain run's, whose session the shim is
	// in), not the terminal's job control. They are caught and dropped,
	// not ignored: an ignored signal would stay ignored in COMMAND, which
	// is to inherit only what contain inherited. Subscribing costs the
	// runtime a round trip per signal: it is done once COMMAND runs, off
	// contain's start-up. (Killed before, the shim leaves COMMAND to its
	// Pdeathsig and to contain, its subreaper, as if it had never been.)
	go func() {
		drop := make(chan os.Signal, 16)
		signal.Notify(drop, notIgnored(append(signals.Fatal(),
			unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU))...)
		for range drop {
		}
	}()
	crashed := make(chan struct{})
	go func() {
		s.readReleases(in) // until contain ends
		s.mu.Lock()
		s.crashed = !s.finished
		s.mu.Unlock()
		if s.crashed {
			s.closeAfterCrash(containPID)
		}
		close(crashed)
	}()
	s.reap()
	s.mu.Lock()
	s.finished = true
	wasCrash := s.crashed
	s.mu.Unlock()
	if wasCrash {
		<-crashed // the report is being written
	}
	return 0
}

// shimRun is the shim at work.
type shimRun struct {
	o      shimOrders
	out    *os.File
	log    Logger
	self   int
	cmd    int      // COMMAND
	since  uint64   // its start
	cmdPin proc.Pin // COMMAND's: signalled after it is reaped, it hits nothing; nil: none

	mu       sync.Mutex
	finished bool // no child is left: the session is over
	crashed  bool // contain ended first
	statuses map[int]unix.WaitStatus
	spared   map[proc.ID]bool // daemons contain released (--allow-daemons)

	statusDeadline time.Time // the report waits for statuses until then
}

// start starts COMMAND as contain would have: its own process group, the
// terminal's foreground if asked, its environment, and a script without
// #! run by /bin/sh, as execvp does.
func (s *shimRun) start() error {
	path, argv := s.o.Path, s.o.Argv
	const shell = "/bin/sh"
	tty := -1
	if s.o.Foreground {
		fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == nil {
			defer unix.Close(fd)
			tty = fd
		}
	}
	for {
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.Signal(s.o.Pdeathsig)}
		if tty >= 0 {
			attr.Foreground, attr.Ctty = true, tty
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: s.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
		if errors.Is(err, unix.ENOEXEC) && argv[0] != shell && haveShell() {
			path, argv = shell, append([]string{shell, path}, s.o.Argv[1:]...)
			continue
		}
		if err != nil {
			return err
		}
		s.cmd, s.since = pid, proc.StartOf(pid)
		s.cmdPin, _ = proc.OpenPin(pid)
		return nil
	}
}

// readReleases reads contain's lines after the orders, until contain
// ends: the daemons it released.
func (s *shimRun) readReleases(in *bufio.Reader) {
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != shimRelease {
			continue
		}
		if id, err := proc.ParseID(f[1], f[2]); err == nil {
			s.mu.Lock()
			if s.spared == nil {
				s.spared = map[proc.ID]bool{}
			}
			s.spared[id] = true
			s.mu.Unlock()
		}
	}
}

// sparedIDs lists the daemons contain released.
func (s *shimRun) sparedIDs() []proc.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]proc.ID, 0, len(s.spared))
	for id := range s.spared {
		out = append(out, id)
	}
	return out
}

// reap waits for every child: COMMAND, whose stops and end go to contain,
// and every orphan of the session, re-parented to the shim. It returns
// when none is left, or, once COMMAND has ended, when only daemons that
// contain released are left: they are none of the session's, and go up
// to contain (a subreaper too), which leaves them the same way.
func (s *shimRun) reap() {
	commandDone := false
	var poll *proc.Backoff
	for {
		var ws unix.WaitStatus
		flags := unix.WUNTRACED
		if commandDone && s.o.AllowDaemons {
			flags |= unix.WNOHANG
		}
		wpid, err := unix.Wait4(-1, &ws, flags, nil)
		switch {
		case err == unix.EINTR:
		case err != nil: // ECHILD: nothing of the session is left
			return
		case wpid == 0: // WNOHANG: none ended
			if onlySpared(s.self, s.sparedIDs()) {
				s.log("only daemons that contain spared are left: leaving them to contain")
				return
			}
			if poll == nil {
				poll = proc.NewBackoff()
			}
			time.Sleep(min(poll.Next(), 50*time.Millisecond))
		case stoppedStatus(ws):
			if wpid == s.cmd {
				fmt.Fprintf(s.out, "%s %d\n", shimStopped, int(ws))
			}
		case wpid == s.cmd:
			s.keep(wpid, ws)
			more := reapEnded(func(ws *unix.WaitStatus, _ *unix.Rusage) (int, error) {
				return unix.Wait4(-1, ws, unix.WNOHANG, nil)
			}, func(pid int, ws unix.WaitStatus, _ *unix.Rusage) { s.reaped(pid, ws) })
			fmt.Fprintf(s.out, "%s %d %s\n", shimExited, int(ws), map[bool]string{true: "1", false: "0"}[more])
			if !more {
				return
			}
			commandDone = true
		default:
			s.reaped(wpid, ws)
		}
	}
}

// reaped tells contain how a process other than COMMAND ended, and keeps
// it for the report the shim writes if contain has died.
func (s *shimRun) reaped(pid int, ws unix.WaitStatus) {
	s.keep(pid, ws)
	fmt.Fprintf(s.out, "%s %d %d\n", shimReaped, pid, int(ws))
}

// keep records how pid ended, for statusOf.
func (s *shimRun) keep(pid int, ws unix.WaitStatus) {
	s.mu.Lock()
	s.statuses[pid] = ws
	s.mu.Unlock()
}

// statusOf is how pid ended, as the shim reaped it. A process seen gone
// through its pidfd may not have been waited for yet: a moment is given,
// once for all (a process outside the shim's tree never comes).
func (s *shimRun) statusOf(pid int) (unix.WaitStatus, bool) {
	if s.statusDeadline.IsZero() {
		s.statusDeadline = time.Now().Add(200 * time.Millisecond)
	}
	deadline := s.statusDeadline
	for {
		s.mu.Lock()
		ws, ok := s.statuses[pid]
		s.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return ws, ok
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeAfterCrash ends the session after contain died: COMMAND gets the
// timeout signal and the grace period to act on it, every other process
// SIGTERM, then everything SIGKILL, found from the top of the tree.
func (s *shimRun) closeAfterCrash(containPID int) {
	s.log("contain %d has ended without closing its group: closing it (session %s)", containPID, s.o.Tag)
	if s.cmdPin != nil && s.o.Signal != 0 {
		if err := s.cmdPin.Signal(syscall.Signal(s.o.Signal)); err == nil {
			s.log("sent %s to COMMAND %d", signals.Name(syscall.Signal(s.o.Signal)), s.cmd)
		}
	}
	o := guard.Orders{Value: s.o.Tag, Grace: s.o.Grace, Verbose: s.o.Verbose, Pgrp: s.cmd, Since: s.since,
		Report: s.o.Report, Signal: syscall.Signal(s.o.Signal), Writer: "shim", Spared: s.sparedIDs()}
	guard.Reap(o, containPID, min(o.Grace, guard.Grace), s.log, s.statusOf)
}

// shimPoll is how often contain reads the shim's children while COMMAND
// runs: every orphan of the session is re-parented to the shim, the
// nearest subreaper, the moment its parent ends, so that a daemon (which
// forks, lets its parent exit and calls setsid) is a child of the shim
// within microseconds of leaving every other link. Reading one small file
// per thread of the shim costs some microseconds, far less than a scan of
// every process (a tenth of the scans' CPU budget at this pace).
const shimPoll = 5 * time.Millisecond

// watchShim keeps every child of the shim in the tracker and the registry
// as soon as it is one, not at the next scan (5 to 200 ms later): should
// contain, its guard and its shim all be killed at once, contain reap
// finds a daemon whose title hides its tag through the registry. It runs
// until the shim ends.
func (r *runner) watchShim() {
	s := r.shim
	dir := fmt.Sprintf("/proc/%d/task", s.pid)
	t := time.NewTicker(shimPoll)
	defer t.Stop()
	seen := map[proc.ID]bool{}
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if !proc.Lives(proc.ID{PID: s.pid, Start: s.start}) {
			return
		}
		for _, pid := range childrenOf(dir) {
			if pid == r.pid {
				continue
			}
			e, ok := proc.EntryOf(pid)
			id := proc.ID{PID: e.PID, Start: e.Start}
			if !ok || e.PPID != s.pid || e.Zombie || seen[id] {
				continue // gone, no longer the shim's, or done
			}
			seen[id] = true
			r.adopted(e)
		}
	}
}

// adopted makes e, a child of the shim, a member and writes it to the
// registry. With --allow-daemons it is only written: the tracker judges
// a process when it first finds it, and a daemon it spares is written
// again as spared, which reap takes for a daemon.
func (r *runner) adopted(e proc.Entry) {
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

// childrenOf reads the children of every thread in dir (/proc/PID/task).
func childrenOf(dir string) []int {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
