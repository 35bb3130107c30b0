package run

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/builtin"
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/shim"
	"github.com/contain-cli/contain/internal/signals"
)

// shimProc is what contain holds of a running shim.
type shimProc struct {
	pid    int
	start  uint64
	orders *os.File // contain's end: its EOF tells the shim that contain ended
	status *os.File
	lines  *bufio.Reader
	done   chan struct{} // closed when every record of the shim was read
	exited bool          // it said that COMMAND ended
	// keeper: the built-in keeper (builtin.Keeper), not contain __shim:
	// orders takes one byte, the word to start COMMAND, and no lines.
	keeper bool
	// spawned is the keeper that builtin.Spawn started, until its first
	// record says that it ran (or its end that it could not).
	spawned *builtin.Child
}

// preparedOS is the shim that PrepareRun started, for a user who has no
// cgroup (likely: not root), so that its start overlaps with contain's
// own; nil when none was started or a run took it.
type preparedOS struct {
	shim    *shimProc
	shimErr error
}

// prepareShim starts the shim early where it will most likely be needed:
// an ordinary user, whose contain can seldom make a cgroup. It runs on
// the main thread (PrepareRun's), whose children contain's reaper waits
// for: fork and exec are all it waits for here, the shim's own start-up
// runs beside contain's.
func (p *Prepared) prepareShim() {
	if os.Geteuid() == 0 || layers.Disabled("shim") || keeperAvailable() {
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
func forkShim() (*shimProc, error) {
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
	files, base := inherited()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"contain", shim.Arg, strconv.Itoa(base)},
		&syscall.ProcAttr{Env: append(os.Environ(), "GOMAXPROCS=1"), Files: append(files, or.Fd(), sw.Fd()),
			Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		ow.Close()
		sr.Close()
		return nil, err
	}
	return &shimProc{pid: pid, start: proc.StartOf(pid), orders: ow, status: sr, lines: bufio.NewReader(sr), done: make(chan struct{})}, nil
}

// startShim has the shim start COMMAND: the built-in keeper, or else
// the early shim or one started now. It returns once COMMAND runs, or
// with its start error.
func (r *runner) startShim(path string, foreground bool) error {
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
	if keeperAvailable() && !r.o.AllowDaemons {
		s, err := startKeeper(o)
		if err == nil {
			err = r.brief(s, []byte{1}, foreground) // the word to start: the brief has the rest
			if err == nil || errors.As(err, new(*StartError)) {
				return err
			}
			// It ended before it started COMMAND (it could not map its
			// brief, say): the guard is told of the shim below instead.
			unix.Kill(s.pid, unix.SIGKILL)
			s.reaped()
			r.shim = nil
		}
		r.log("cannot start the built-in keeper: %v (the shim runs as contain %s)", err, shim.Arg)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	var s *shimProc
	if p := r.o.Prepared; p != nil {
		s, err = p.shim, p.shimErr
		p.shim, p.shimErr = nil, nil
	}
	if s == nil || err != nil {
		if s, err = forkShim(); err != nil {
			return err
		}
	}
	return r.brief(s, append(b, '\n'), foreground)
}

// brief tells the guard of shim s, then has s start COMMAND (orders: the
// JSON line, or the keeper's word; foreground: it takes the terminal),
// and returns once COMMAND runs, or with its start error.
func (r *runner) brief(s *shimProc, orders []byte, foreground bool) error {
	r.shim = s
	// The guard learns of the shim before COMMAND can run: should contain
	// die at once, the shim, not the guard, gives COMMAND its -s signal
	// and closes the group, and the guard waits for it. (Told later, the
	// guard stopped and sent SIGTERM to a COMMAND that had just started,
	// 1 round in 80 with the CPUs busy.)
	if err := r.guard.Shim(s.pid, s.start); err != nil {
		r.log("cannot tell the crash guard of the shim: %v", err)
	}
	// Locked: brief runs on the main goroutine, which stays on the main
	// thread (PrepareRun).
	if _, err := nosigpipe.Locked(s.orders).Write(orders); err != nil {
		return fmt.Errorf("cannot brief the shim: %w", err)
	}
	rec, err := shim.ReadRecord(s.lines)
	var execErr error
	if s.spawned != nil {
		// It wrote a record, or ended: either way it is done with the
		// memory it shared.
		execErr = s.spawned.Executed()
		s.spawned = nil
	}
	switch {
	case execErr != nil:
		return fmt.Errorf("cannot execute it: %v", execErr)
	case err != nil:
		return fmt.Errorf("the shim ended before starting COMMAND: %v", err)
	case rec.Kind == shim.Failed:
		return &StartError{Name: r.o.Args[0], Err: syscall.Errno(rec.A)}
	case rec.Kind == shim.Started:
		r.pid = int(rec.A)
		r.jc.started(foreground)
		return nil
	}
	return fmt.Errorf("the shim said %+v", rec)
}

// keeperAvailable reports whether the shim can be the built-in keeper:
// there is code for this machine, and CONTAIN_DISABLE does not name
// "keeper".
func keeperAvailable() bool { return builtin.Available() && !layers.Disabled("keeper") }

// inherited are the descriptors a shim keeps at their numbers, for
// COMMAND: 0 to 2, and every one above that contain inherited (open, not
// close-on-exec: systemd's sockets, make's jobserver, a 5>log), the
// others closed (^uintptr(0)); base is the first number above them all,
// where the shim's own go.
func inherited() (files []uintptr, base int) {
	files, base = []uintptr{0, 1, 2}, 3
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return files, base
	}
	defer unix.Close(dir)
	var open []int
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(dir, buf)
		if err != nil || n <= 0 {
			break
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			fd, err := strconv.Atoi(name)
			if err != nil || fd < 3 || fd == dir {
				continue
			}
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
				open = append(open, fd)
				base = max(base, fd+1)
			}
		}
	}
	for fd := 3; fd < base; fd++ {
		files = append(files, ^uintptr(0))
	}
	for _, fd := range open {
		files[fd] = uintptr(fd)
	}
	return files, base
}

// startKeeper starts the built-in keeper, briefed to start COMMAND (o),
// which waits for the word to start it. It runs on the main thread, as
// the shim does. The brief is written while the keeper executes: it
// reads it only once it has the word.
func startKeeper(o shim.Orders) (*shimProc, error) {
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	defer closeAll()
	files, base := inherited()
	var fdbase [4]byte
	binary.LittleEndian.PutUint32(fdbase[:], uint32(base))
	prog, err := builtin.Load("contain-shim", builtin.Keeper, fdbase[:])
	if err != nil {
		return nil, err
	}
	opened = append(opened, prog)
	brief, err := builtin.Memfd("contain-shim-brief")
	if err != nil {
		return nil, err
	}
	opened = append(opened, brief)
	journal, err := builtin.Memfd("contain-shim-journal")
	if err != nil {
		return nil, err
	}
	opened = append(opened, journal)
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	opened = append(opened, self)
	sr, sw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	opened = append(opened, sw)
	er, ew, err := os.Pipe()
	if err != nil {
		sr.Close()
		return nil, err
	}
	opened = append(opened, er)
	nosigpipe.Quiet(ew)
	argv := []string{"contain-shim", shim.Arg, shim.KeeperArg, strconv.Itoa(base)}
	env := append(os.Environ(), "GOMAXPROCS=1")
	// Spawned where it can be: contain goes on (briefs the guard, writes
	// the word) while the keeper executes. The descriptors contain
	// inherited open stay at their numbers, its own (close-on-exec) go.
	c, err := builtin.Spawn(builtin.Spec{Argv: argv, Env: env, Prog: base + shim.KeeperFd, Moves: []builtin.Move{
		{Src: int(brief.Fd()), Dst: base + shim.BriefFd}, {Src: int(sw.Fd()), Dst: base + shim.StatusFd},
		{Src: int(er.Fd()), Dst: base + shim.EndFd}, {Src: int(journal.Fd()), Dst: base + shim.JournalFd},
		{Src: int(self.Fd()), Dst: base + shim.ExeFd}, {Src: int(prog.Fd()), Dst: base + shim.KeeperFd}}})
	var pid int
	if err == nil {
		pid = c.Pid
	} else {
		c = nil
		pid, err = syscall.ForkExec("/proc/self/fd/"+strconv.Itoa(base+shim.KeeperFd), argv,
			&syscall.ProcAttr{Env: env, Files: append(files, brief.Fd(), sw.Fd(), er.Fd(), journal.Fd(), self.Fd(), prog.Fd()),
				Sys: &syscall.SysProcAttr{Setpgid: true}})
	}
	if err != nil {
		sr.Close()
		ew.Close()
		return nil, err
	}
	s := &shimProc{pid: pid, start: proc.StartOf(pid), orders: ew, status: sr, lines: bufio.NewReader(sr),
		done: make(chan struct{}), keeper: true, spawned: c}
	// The orders again as JSON, for contain __shim keeper should contain
	// die.
	b, err := json.Marshal(o)
	if err == nil {
		_, err = brief.Write(shim.Brief(o, b, os.Getpid()))
	}
	if err != nil {
		ew.Close() // its end before the word: it exits
		s.reaped()
		sr.Close()
		return nil, err
	}
	return s, nil
}

// reaped waits for a keeper that ended (or was killed) before it started
// COMMAND, and then releases the memory a spawned one shared, no longer
// its.
func (s *shimProc) reaped() {
	for {
		_, err := unix.Wait4(s.pid, nil, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err == nil && s.spawned != nil {
			s.spawned.Ended()
			s.spawned = nil
		}
		return
	}
}

// relay turns the shim's records into what contain's reaper would have seen
// had COMMAND been its child: COMMAND's stops and end go to the main loop,
// the others' ends to the report.
func (r *runner) relay() {
	s := r.shim
	defer close(s.done)
	for {
		rec, err := shim.ReadRecord(s.lines)
		if err != nil {
			return
		}
		switch rec.Kind {
		case shim.Stopped:
			r.events <- waitEvent{status: unix.WaitStatus(rec.A)}
		case shim.Exited:
			s.exited = true
			r.events <- waitEvent{status: unix.WaitStatus(rec.A), more: rec.B == 1}
		case shim.Reaped:
			r.reapedOne(int(rec.A), unix.WaitStatus(rec.B), nil)
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
