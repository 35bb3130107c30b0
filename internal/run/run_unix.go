//go:build linux || darwin

package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// unixFirst and unixLater are the forwarded signals Linux and macOS share
// (see run_linux.go for why some come first); each OS adds its own.
// WINCH and CONT come first among the later ones: the guard does not
// ignore them.
var (
	unixFirst = []os.Signal{unix.SIGALRM, unix.SIGINT, unix.SIGQUIT, unix.SIGHUP, unix.SIGTERM,
		unix.SIGPIPE, unix.SIGUSR1, unix.SIGUSR2, unix.SIGABRT,
		// Without a round trip: the runtime handles these itself.
		unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSYS}
	unixLater = []os.Signal{unix.SIGWINCH, unix.SIGCONT, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM}
)

// notIgnored drops the signals contain was started with ignored: nohup
// ignores HUP, a shell without job control ignores INT (and QUIT) in its
// background jobs, and COMMAND inherits that, as it would without contain.
// (Go reports an inherited SIG_IGN for HUP and INT only: for every other
// signal it installs its own handler at start-up, and what was there
// before is lost to contain and to COMMAND.)
func notIgnored(sigs []os.Signal) []os.Signal {
	var out []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// stopRequest reports whether sig, sent to contain, means "stop": it is
// forwarded, and the group is killed if COMMAND is still running a grace
// period later.
func stopRequest(sig unix.Signal) bool {
	return sig == unix.SIGINT || sig == unix.SIGTERM || sig == unix.SIGHUP || sig == unix.SIGQUIT
}

// subscription is the signal subscription the next Run takes over. It may
// start early (PrepareRun), in parallel with the parsing of options.
var subscription struct {
	mu   sync.Mutex
	sigs chan os.Signal
	done chan struct{} // closed when the subscription is in force
}

// PrepareRun keeps the main goroutine on the main thread, starts the crash
// guard and starts subscribing to the signals that would end contain, so
// that Run does not wait for either (the guard's fork and exec, and the
// runtime's round trip per subscribed signal, are the slowest steps of
// contain run's set-up). Until Run starts COMMAND, the signals queue.
// contain's main calls it first thing.
//
// The main thread is the thread group leader: the kernel gives orphans to
// the leader of a subreaper, so the reaper, which waits with __WNOTHREAD,
// must run there (and Pdeathsig needs a thread that lives as long as
// contain: the leader does). Every other goroutine, the one that starts the
// crash guard included, then runs on other threads, so the guard is not
// among the children the reaper waits for. main starts on the main thread
// but may move once it blocks, hence first thing. (Locking in an init
// function would do, for every command, and costs contain run -- true 5%.)
func PrepareRun() {
	runtime.LockOSThread()
	preparedByMain = true
	early.guardDone = make(chan struct{})
	go func() {
		early.guard, early.guardErr = startGuard()
		close(early.guardDone)
	}()
	prepareShim()
	subscribe()
}

// preparedByMain is set when contain's own main prepared the run. Only
// then is the executable contain, and able to be the guard (a test binary
// that calls Run is not), and the main goroutine on the main thread. And
// the process exits once Run returns, so Run leaves the signal
// subscription in force instead of stopping it: signal.Stop costs a round
// trip between two runtime threads per signal, like subscribing (measured:
// 0.5-0.8 ms of contain run -- true); a signal that comes after the group
// is closed changes nothing.
var preparedByMain bool

// early is what PrepareRun started for the next Run: the crash guard.
var early struct {
	guardDone chan struct{} // closed once guard or guardErr is set
	guard     *guard
	guardErr  error
}

// DropGuard ends the guard that PrepareRun started if no Run took it
// (--detach, a bad option, help), so that it does not outlive contain.
func DropGuard() {
	if g := takeGuard(nopLog); g != nil {
		g.stop()
	}
	dropShim()
}

// takeGuard waits for the guard that PrepareRun started and hands it to
// one Run; nil when there is none.
func takeGuard(log Logger) *guard {
	if early.guardDone == nil {
		return nil
	}
	<-early.guardDone
	g, err := early.guard, early.guardErr
	early.guardDone, early.guard, early.guardErr = nil, nil, nil
	if err != nil {
		log("cannot start the crash guard: %v (if contain is killed, run contain reap)", err)
	}
	return g
}

// subscribe starts the subscription, once.
func subscribe() {
	subscription.mu.Lock()
	defer subscription.mu.Unlock()
	if subscription.sigs != nil {
		return
	}
	sigs, done := make(chan os.Signal, 64), make(chan struct{})
	subscription.sigs, subscription.done = sigs, done
	go func() {
		signal.Notify(sigs, notIgnored(forwardedFirst)...)
		close(done)
	}()
}

// takeSubscription hands the prepared subscription to one Run.
func takeSubscription() (chan os.Signal, chan struct{}) {
	subscribe()
	subscription.mu.Lock()
	defer subscription.mu.Unlock()
	sigs, done := subscription.sigs, subscription.done
	subscription.sigs, subscription.done = nil, nil
	return sigs, done
}

// Run starts COMMAND in a kill-on-close group, waits for it, then closes the
// group: SIGTERM to everything left, SIGKILL after the grace period. It
// returns only when nothing of the group is left.
func Run(o Options) (Result, error) {
	if o.Detach {
		return runDetached(o)
	}
	r := &runner{o: o, log: o.logger(), self: os.Getpid(), ownPgrp: unix.Getpgrp(),
		events: make(chan waitEvent, 4), noKids: make(chan struct{})}
	return r.run()
}

type runner struct {
	o       Options
	log     Logger
	self    int
	ownPgrp int
	tty     *terminal
	gaveTTY bool // COMMAND's group was given the terminal at some point

	guard *guard         // the crash guard, a child of contain but no member of the group; nil: none
	reg   *reap.Registry // the session's members for contain reap, without a cgroup; nil: none

	pid      int // COMMAND; also its process group
	status   unix.WaitStatus
	mainDone bool
	more     bool // when COMMAND ended, some other child was still alive
	stopped  bool // COMMAND is stopped (Ctrl-Z) and so is contain
	timedOut bool

	trackMu sync.Mutex
	track   *proc.Tracker    // every process COMMAND started, as scans see them
	told    map[proc.ID]bool // members the guard was told of
	watched chan struct{}    // closed when the watcher, if any, has stopped

	sigs   chan os.Signal
	events chan waitEvent // from the reaper: COMMAND stopped or ended
	noKids chan struct{}  // closed by the reaper once contain has no child left

	// With RunOptions.Collect: what the report says.
	facts  *Facts
	usage  usage // of every process contain reaped
	peak   int   // the most live members one scan saw
	leftMu sync.Mutex
	reaped map[int]unix.WaitStatus // processes other than COMMAND that contain reaped
	left   []*leftover             // alive when COMMAND ended
	runnerOS
}

// usage adds up the rusage of the processes contain reaped: each includes
// what that process reaped in turn.
type usage struct {
	user, system time.Duration
	maxRSS       uint64 // bytes
	n            int
}

func (u *usage) add(ru *unix.Rusage) {
	u.user += time.Duration(ru.Utime.Nano())
	u.system += time.Duration(ru.Stime.Nano())
	u.maxRSS = max(u.maxRSS, maxRSSBytes(ru))
	u.n++
}

// leftover is a process alive when COMMAND ended, as the report shows it.
type leftover struct {
	id     proc.ID
	out    report.Leftover
	signal string // the last signal contain sent it (before it was gone, once done)
	done   bool
}

// stoppedStatus reports whether ws says the process stopped. WaitStatus.Stopped
// is false for a stop by SIGSTOP on the BSDs, macOS included (it takes
// SIGSTOP for the marker of a continued process): the bits decide.
func stoppedStatus(ws unix.WaitStatus) bool { return ws&0xff == 0x7f }

// waitEvent is what the reaper reports about COMMAND.
type waitEvent struct {
	status unix.WaitStatus
	more   bool // with an exit: other children were alive at that moment
}

func (r *runner) run() (Result, error) {
	// Subscribed before starting, so that no signal that would end contain
	// comes between the start and the loop.
	sigs, subscribed := takeSubscription()
	r.sigs = sigs
	var laterDone chan struct{} // the subscription to forwardedLater is in force
	if !preparedByMain {
		defer func() {
			if laterDone != nil {
				<-laterDone // else it could subscribe after the Stop
			}
			signal.Stop(r.sigs)
		}()
	}

	if g := r.takeGuard(); g != nil {
		defer g.stop()
		r.guard = g
	}

	if r.o.Collect {
		r.facts = &Facts{}
		r.reaped = map[int]unix.WaitStatus{}
	}
	layers := append([]string{"process group"}, r.setUp()...)
	if r.tty = openTerminal(); r.tty != nil {
		defer r.tty.close()
	}
	<-subscribed

	// Pdeathsig fires when the thread that forked the child exits, not when
	// the process does (golang/go#27505): this goroutine stays on its thread
	// from the fork until the last child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := r.start(); err != nil {
		r.groupRemove()
		return Result{}, err
	}
	since := proc.StartOf(r.pid)
	// The guard learns COMMAND first: should contain die now, COMMAND is
	// the one the guard leaves its -s signal to act on.
	if r.guard != nil {
		if err := r.guard.command(r.pid, since); err != nil {
			r.log("cannot tell the crash guard COMMAND's process group: %v", err)
		}
	}
	// Without a cgroup, what the scans find is also written where contain
	// reap can read it should contain, its shim and its guard all be
	// killed: a process that wrote over its environment shows no tag.
	if !r.strong() {
		if reg, err := reap.OpenRegistry(r.o.Tag, r.pid, since); err != nil {
			r.log("no registry for contain reap: %v", err)
		} else {
			r.reg = reg
			defer reg.Remove()
		}
	}
	r.track = proc.NewTracker(r.self, r.pid, since, r.o.Tag)
	r.track.TagOf, r.track.SidOf = tagReader(r.o.Tag), proc.SessionOf
	r.told = map[proc.ID]bool{}
	if r.guard != nil {
		r.track.Skip[r.guard.pid] = true
		r.log("crash guard: PID %d", r.guard.pid)
	}
	if g := r.groupName(); g != "" {
		layers = append(layers, g)
	} else {
		layers = append(layers, "tracking")
	}
	layers = append(layers, r.started()...)
	r.log("started %s as PID %d; containment: %s", r.o.Args[0], r.pid, strings.Join(layers, ", "))
	if r.facts != nil {
		r.facts.Started, r.facts.Layers = time.Now(), layers
	}
	closed := make(chan struct{})
	laterDone = make(chan struct{})
	go func() {
		signal.Notify(r.sigs, forwardedLater...)
		close(laterDone)
	}()
	stopWatch := r.watch()
	go func() {
		r.waitMain()
		stopWatch()
		r.restoreTerminal()
		r.closeGroup()
		close(closed)
	}()
	r.reap()
	<-closed

	res := Result{Pid: r.pid, TimedOut: r.timedOut, Facts: r.finishFacts()}
	switch {
	case r.status.Exited():
		res.Exited, res.Code = true, r.status.ExitStatus()
	case r.status.Signaled():
		res.Signaled, res.Signal = true, syscall.Signal(r.status.Signal())
	}
	return res, nil
}

// takeGuard takes the crash guard that PrepareRun started and tells it the
// session, before anything of the session exists (cgroup, COMMAND).
func (r *runner) takeGuard() *guard {
	if !preparedByMain {
		r.log("run from another program than contain: no crash guard")
		return nil
	}
	g := takeGuard(r.log)
	if g == nil {
		return nil
	}
	if err := r.guardable(); err != nil {
		r.log("%v: no crash guard (if contain is killed, run contain reap)", err)
		g.stop()
		return nil
	}
	if err := g.watch(r.o.Tag, r.o.Grace, r.o.Log != nil, r.o.Signal); err != nil {
		r.log("cannot brief the crash guard: %v (if contain is killed, run contain reap)", err)
		g.stop()
		return nil
	}
	if r.o.Report != "" {
		if err := g.reportTo(guardReportOrder{Path: r.o.Report, Command: r.o.Args, Started: time.Now()}); err != nil {
			r.log("cannot tell the crash guard where the report goes: %v", err)
		}
	}
	return g
}

// lookPath finds COMMAND as execvp(3) does: a name with a slash as it is,
// anything else in $PATH (a relative directory in $PATH included, which
// exec.LookPath refuses). A name that $PATH holds only as something that
// cannot be executed — `contain run -- .` finds a directory — cannot be
// run (126), as with execvp, rather than not found (127).
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrDot):
		return path, nil
	case !errors.Is(err, exec.ErrNotFound):
		return "", err
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); unix.Access(p, unix.F_OK) == nil {
			return "", &os.PathError{Op: "exec", Path: p, Err: unix.EACCES}
		}
	}
	return "", err
}

// reap waits for every child of contain, COMMAND and the orphans it adopts
// as subreaper, so that none stays a zombie. COMMAND's stops and its end go
// to the main loop; nothing else can take its status, since this is the
// only place that waits. It returns, closing noKids, when no child is left:
// every live process of the group has a live ancestor among contain's
// children, so then the group is empty.
func (r *runner) reap() {
	defer close(r.noKids)
	pid := r.pid
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		wpid, err := r.wait(&ws, unix.WUNTRACED, &ru)
		if err == nil && !stoppedStatus(ws) {
			r.reapedOne(wpid, ws, &ru)
		}
		switch {
		case err == unix.EINTR:
		case err != nil: // ECHILD
			return
		case stoppedStatus(ws):
			if wpid == pid {
				r.events <- waitEvent{status: ws}
			}
		case wpid == pid:
			more := r.reapReady()
			r.events <- waitEvent{status: ws, more: more}
			if !more {
				return
			}
		case r.shimEnded(wpid, ws):
		default:
			r.log("reaped adopted process %d", wpid)
		}
	}
}

// reapedOne counts a process contain reaped, for the report.
func (r *runner) reapedOne(pid int, ws unix.WaitStatus, ru *unix.Rusage) {
	if r.facts == nil {
		return
	}
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	if ru != nil {
		r.usage.add(ru)
	}
	if pid != r.pid {
		r.reaped[pid] = ws
	}
}

// reapReady reaps the children that have already ended and reports whether
// any is still alive.
func (r *runner) reapReady() (alive bool) {
	return reapEnded(func(ws *unix.WaitStatus, ru *unix.Rusage) (int, error) {
		return r.wait(ws, unix.WNOHANG, ru)
	}, func(pid int, ws unix.WaitStatus, ru *unix.Rusage) {
		r.reapedOne(pid, ws, ru)
		r.log("reaped adopted process %d", pid)
	})
}

// reapEnded reaps, with wait (which must not block), every child that has
// ended, handing each to ended, and reports whether any child is still
// alive. contain's reaper and the shim's share it.
func reapEnded(wait func(*unix.WaitStatus, *unix.Rusage) (int, error), ended func(int, unix.WaitStatus, *unix.Rusage)) bool {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		wpid, err := wait(&ws, &ru)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		case wpid == 0:
			return true
		default:
			ended(wpid, ws, &ru)
		}
	}
}

// waitMain runs until COMMAND has ended and is reaped: it follows COMMAND's
// stops, forwards signals, and runs the timeout.
func (r *runner) waitMain() {
	var timeoutC, killC, stopC <-chan time.Time
	if r.o.Timeout > 0 {
		t := time.NewTimer(r.o.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	for !r.mainDone {
		select {
		case ev := <-r.events:
			if stoppedStatus(ev.status) {
				r.commandStopped(syscall.Signal(ev.status >> 8 & 0xff))
			} else {
				r.status, r.more, r.mainDone = ev.status, ev.more, true
				if r.facts != nil {
					r.facts.CommandEnded = time.Now()
				}
			}
		case s := <-r.sigs:
			sig := s.(syscall.Signal)
			switch {
			case stopRequest(sig):
				if r.facts != nil && r.facts.ToldToStop == "" {
					r.facts.ToldToStop = signals.Name(sig)
				}
				r.log("received %s: forwarding it to the group", signals.Name(sig))
				r.signalGroup(sig)
				switch {
				case stopC != nil || r.o.Grace == 0:
					r.log("killing the group")
					r.killGroup()
				default:
					stopC = time.After(r.o.Grace)
				}
			case sig == unix.SIGCONT:
				r.resumed()
			case sig == unix.SIGALRM:
				r.timeout(true)
				if r.o.KillAfter > 0 && killC == nil {
					killC = time.After(r.o.KillAfter)
				}
			default:
				r.log("received %s: forwarding it to the group", signals.Name(sig))
				r.signalGroup(sig)
			}
		case <-timeoutC:
			r.timeout(false)
			if r.o.KillAfter > 0 && killC == nil {
				killC = time.After(r.o.KillAfter)
			}
		case <-killC:
			if r.facts != nil {
				r.facts.KilledAfterTimeout = true
			}
			r.log("still running %v after the timeout signal: sending SIGKILL to the group", r.o.KillAfter)
			r.killGroup()
		case <-stopC:
			r.log("still running %v after being told to stop: sending SIGKILL to the group", r.o.Grace)
			r.killGroup()
		}
	}
}

// timeout sends the timeout signal to the group: the timer fired, or
// contain got SIGALRM ("time out now", as GNU timeout takes it, so that
// nested runs cascade).
func (r *runner) timeout(alarm bool) {
	r.timedOut = true
	if alarm {
		r.log("received SIGALRM: timing out now, sending %s to the group", signals.Name(r.o.Signal))
	} else {
		r.log("timeout after %v: sending %s to the group", r.o.Timeout, signals.Name(r.o.Signal))
	}
	if r.o.Signal == 0 {
		return
	}
	r.signalGroup(r.o.Signal)
	// A stopped process would not act on the signal until continued, as
	// in GNU timeout.
	if r.o.Signal != unix.SIGKILL && r.o.Signal != unix.SIGCONT {
		r.signalGroup(unix.SIGCONT)
	}
}

// commandStopped follows COMMAND into a stop (Ctrl-Z) on a terminal: take
// the terminal back, then stop contain with the same signal, so that the
// shell sees its job stopped and can resume it with fg or bg.
//
// Under a shell without job control contain's process group is orphaned:
// the kernel discards job-control stops sent to it, and nobody would ever
// resume COMMAND. There contain does what the kernel does for an orphaned
// group: it does not stop, and lets COMMAND go on (with the terminal, when
// contain has it to give).
func (r *runner) commandStopped(sig syscall.Signal) {
	if r.tty == nil {
		r.log("command stopped by %s", signals.Name(sig))
		return
	}
	jobControl := sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
	if jobControl && orphanedPgrp(r.ownPgrp) {
		fg := r.tty.foreground()
		if fg == r.ownPgrp {
			if err := r.tty.setForeground(r.pid); err == nil {
				r.gaveTTY, fg = true, r.pid
			}
		}
		if sig == unix.SIGTSTP || fg == r.pid {
			r.log("command stopped by %s, but contain's process group is orphaned (no job control): continuing it", signals.Name(sig))
			r.signalGroup(unix.SIGCONT)
			return
		}
		r.log("command stopped by %s and the terminal is not contain's to give", signals.Name(sig))
		return
	}
	r.stopped = true
	if r.tty.foreground() == r.pid {
		if err := r.tty.setForeground(r.ownPgrp); err != nil {
			r.log("cannot take the terminal back: %v", err)
		}
	}
	r.log("command stopped by %s: stopping contain too", signals.Name(sig))
	unix.Kill(r.self, selfStop(sig))
}

// orphanedPgrp reports whether process group pgrp (contain's) is orphaned:
// no ancestor of contain outside the group is in the same session, so no
// shell can resume it. The kernel looks at the parents of every member;
// contain's own line of ancestors is what matters here.
func orphanedPgrp(pgrp int) bool {
	sid, err := unix.Getsid(0)
	if err != nil {
		return false
	}
	for pid := os.Getppid(); pid > 1; {
		pg, err := unix.Getpgid(pid)
		if err != nil {
			return false
		}
		if pg != pgrp {
			psid, err := unix.Getsid(pid)
			return err != nil || psid != sid
		}
		ppid, err := proc.ParentOf(pid)
		if err != nil {
			return false
		}
		pid = ppid
	}
	return true
}

// resumed handles SIGCONT: after fg, contain is in the foreground again and
// gives the terminal back to COMMAND; after bg it is not, and COMMAND goes
// on in the background. Either way SIGCONT goes to the whole group.
func (r *runner) resumed() {
	if r.stopped && r.tty.foreground() == r.ownPgrp {
		if err := r.tty.setForeground(r.pid); err != nil {
			r.log("cannot give the terminal to the command: %v", err)
		} else {
			r.gaveTTY = true
		}
	}
	r.stopped = false
	r.log("received SIGCONT: forwarding it to the group")
	r.signalGroup(unix.SIGCONT)
}

// restoreTerminal gives the terminal back to contain's own process group.
func (r *runner) restoreTerminal() {
	if r.tty == nil || !r.gaveTTY {
		return
	}
	if fg := r.tty.foreground(); fg != r.ownPgrp && fg != -1 {
		if err := r.tty.setForeground(r.ownPgrp); err != nil {
			r.log("cannot give the terminal back: %v", err)
		}
	}
}

// member is one process of the group, as seen by a scan.
type member struct {
	pid   int
	comm  string
	start uint64     // 0: found only through the cgroup
	entry proc.Entry // as the scan saw it (zero for the cgroup's)
}

// tagReader reads processes' tags for the tracker.
func tagReader(value string) func(int) proc.TagRead {
	return func(pid int) proc.TagRead {
		v, ok, err := proc.ReadTag(pid, nil)
		switch {
		case err != nil:
			return proc.TagUnknown
		case ok && v == value:
			return proc.TagOurs
		}
		return proc.TagOther
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
	if r.strong() {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	w := proc.NewWaker(r.log)
	w.Follow(r.pid)
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
	procs, err := proc.Scan()
	if err != nil {
		r.log("cannot list processes: %v", err)
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	live, added = r.track.Update(procs)
	r.peak = max(r.peak, len(live))
	for _, p := range added {
		if err := r.reg.Member(p.PID, p.Start); err != nil {
			r.log("cannot write %d to the registry: %v", p.PID, err)
		}
	}
	if r.guard == nil {
		return live, added
	}
	for _, p := range live {
		id := proc.ID{PID: p.PID, Start: p.Start}
		if p.Pgrp == r.pid || r.told[id] {
			continue
		}
		r.told[id] = true
		if err := r.guard.member(p.PID, p.Start); err != nil {
			r.log("cannot tell the crash guard of %d: %v", p.PID, err)
		}
	}
	return live, added
}

// cpuTime is the CPU time contain has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	for _, pid := range r.groupProcs() {
		if seen[pid] {
			continue
		}
		// In the cgroup, missed by the scan (its parent ended between the
		// listing and the reading): its identity is read now, and the
		// tracker keeps it, so that the next scan does not take it for
		// gone nor the close signal it twice.
		m := member{pid: pid}
		if e, ok := proc.EntryOf(pid); ok {
			m = member{pid: pid, comm: e.Comm, start: e.Start, entry: e}
			r.trackMu.Lock()
			r.track.RememberAs(pid, e.Start, "cgroup")
			r.trackMu.Unlock()
		}
		out = append(out, m)
	}
	return out
}

// signal sends sig to m, after checking that the PID still names the
// process that was seen (through a pidfd on Linux).
func (r *runner) signal(m member, sig syscall.Signal) error {
	if m.start == 0 {
		return proc.SignalMember(m.pid, 0, sig, func() error { return r.groupHolds(m.pid) })
	}
	return proc.SignalMember(m.pid, m.start, sig, nil)
}

// signalGroup sends sig to every process of the group, once each, except
// the members of a nested session (a contain run inside this one, or
// another tool that tags its own): those are left to their originator,
// itself a member, which passes the signal on as it should (its own -s on
// SIGALRM, say), so that nothing gets a signal twice and nested timeouts
// cascade as GNU timeout's do. Closing the group spares nothing.
func (r *runner) signalGroup(sig syscall.Signal) {
	for _, m := range r.notNested(r.members()) {
		if err := r.signal(m, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			r.log("cannot send %s to %d (%s): %v", signals.Name(sig), m.pid, m.comm, err)
		}
	}
}

// notNested drops the members whose tag names another live member as
// their originator.
func (r *runner) notNested(members []member) []member {
	in := make(map[int]bool, len(members))
	for _, m := range members {
		in[m.pid] = true
	}
	buf := make([]byte, 0, 4096)
	out := members[:0:0]
	for _, m := range members {
		if v, ok, err := proc.ReadTag(m.pid, buf); err == nil && ok && v != r.o.Tag {
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
// cgroup, or every one when there is none).
func (r *runner) killGroup() {
	members := r.members()
	if r.mainDone {
		r.noteLeftovers(members)
	}
	r.noteGone(members)
	cgKilled := r.groupKill()
	for _, m := range members {
		before := r.noteSignal(m, "SIGKILL")
		if err := r.signal(m, unix.SIGKILL); err == nil || cgKilled {
			r.log("killed %d (%s)", m.pid, m.comm)
		} else {
			r.noteSignal(m, before)
		}
	}
}

// anyLeft reports whether any process of the group still lives.
func (r *runner) anyLeft() bool {
	select {
	case <-r.noKids:
	default:
		return true
	}
	return r.othersLeft()
}

// othersLeft reports whether a process of the group that is no child of
// contain still lives: in the cgroup, or found by the tracker.
func (r *runner) othersLeft() bool {
	if r.groupPopulated() {
		return true
	}
	if r.complete() {
		return false
	}
	live, _ := r.scanAll()
	return len(live) > 0
}

// closeGroup runs after COMMAND ended: SIGTERM (and SIGCONT, for stopped
// processes) to everything left, SIGKILL to what is still there after the
// grace period, and return only when nothing is left. A stop request during
// the grace period kills at once.
func (r *runner) closeGroup() {
	defer r.groupRemove()
	// Nothing left is the common case: no child, and the cgroup (if any)
	// can be removed, which only an empty group can.
	if !r.more && r.groupEmptied() && (r.complete() || !r.othersLeft()) {
		return
	}
	defer r.noteGone(nil)
	r.noteLeftovers(r.members())
	wait := proc.NewBackoff()
	if r.o.Grace > 0 {
		deadline := time.Now().Add(r.o.Grace)
		termed := make(map[proc.ID]bool) // comm changes on exec; these do not
	grace:
		for {
			ms := r.members()
			r.noteLeftovers(ms)
			r.noteGone(ms)
			for _, m := range ms {
				if termed[proc.ID{PID: m.pid, Start: m.start}] {
					continue
				}
				termed[proc.ID{PID: m.pid, Start: m.start}] = true
				// Recorded before it is sent: the reaper may see it end
				// before this goroutine goes on.
				before := r.noteSignal(m, "SIGTERM")
				r.log("sending SIGTERM to leftover %d (%s)", m.pid, m.comm)
				if err := r.signal(m, unix.SIGTERM); err == nil {
					r.signal(m, unix.SIGCONT)
				} else {
					r.noteSignal(m, before)
				}
			}
			if !r.anyLeft() {
				return
			}
			if time.Now().After(deadline) {
				r.log("still running after the grace period of %v", r.o.Grace)
				break
			}
			if r.pause(wait, time.Until(deadline)) {
				break grace
			}
		}
	}
	wait = proc.NewBackoff()
	for r.anyLeft() {
		r.killGroup()
		r.pause(wait, time.Second)
	}
}

// pause waits until the last child is reaped, a stop request comes (then
// it returns true) or the next backoff step, whichever is first; other
// signals are forwarded.
func (r *runner) pause(b *proc.Backoff, limit time.Duration) (stop bool) {
	d := min(b.Next(), max(limit, time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	noKids := r.noKids
	select {
	case <-noKids:
		if !r.othersLeft() {
			return false
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
		}
	}
	return false
}

// noteLeftovers records the processes alive after COMMAND ended, each
// once: those there when the close began, and those found while closing.
func (r *runner) noteLeftovers(ms []member) {
	if r.facts == nil {
		return
	}
	sid, _ := unix.Getsid(0) // COMMAND's session is contain's
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	known := make(map[proc.ID]bool, len(r.left))
	for _, l := range r.left {
		known[l.id] = true
	}
	for _, m := range ms {
		if known[proc.ID{PID: m.pid, Start: m.start}] {
			continue
		}
		l := &leftover{id: proc.ID{PID: m.pid, Start: m.start}}
		o := &l.out
		o.PID, o.Argv, o.FoundBy = m.pid, proc.ArgvOf(m.pid), "cgroup"
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
			o.Started = &report.Time{Time: proc.StartWall(m.start, r.track.Since, r.facts.Started)}
			o.LeftProcessGroup = report.Ptr(m.entry.Pgrp != r.pid)
			msid := m.entry.Sid
			if msid == 0 {
				msid, _ = unix.Getsid(m.pid)
			}
			o.LeftSession = report.Ptr(msid != sid)
		}
		var why string
		o.HeldStdout, o.HeldStderr, why = proc.HeldStdio(m.pid)
		if why != "" {
			if o.Absent == nil {
				o.Absent = map[string]string{}
			}
			o.Absent["held_stdout"], o.Absent["held_stderr"] = why, why
		}
		r.left = append(r.left, l)
	}
}

// noteSignal records the last signal sent to a leftover.
// It returns what was recorded before, to be put back if the send fails.
func (r *runner) noteSignal(m member, sig string) (before string) {
	if r.facts == nil {
		return ""
	}
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	for _, l := range r.left {
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
	if r.facts == nil {
		return
	}
	alive := map[proc.ID]bool{}
	for _, m := range live {
		alive[proc.ID{PID: m.pid, Start: m.start}] = true
	}
	now := time.Now()
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	for _, l := range r.left {
		if l.done || alive[l.id] {
			continue
		}
		l.done = true
		l.out.EndedAfterSeconds = report.Seconds(now.Sub(r.facts.CommandEnded))
		// How it ended is read at the end (finishFacts): its status may
		// come later.
	}
}

// endedBy says how a leftover ended: the signal it died of; or, when it
// exited, its status, after the signal contain had sent it if any
// ("SIGTERM, then exited 0": it exited because it was told to); or, when
// neither contain nor its shim reaped it (re-parented out of their
// reach), that its status is unknown.
func endedBy(sent string, ws unix.WaitStatus, reaped bool) string {
	var how string
	switch {
	case reaped && ws.Signaled():
		return signals.Name(ws.Signal())
	case reaped && ws.Exited():
		how = fmt.Sprintf("exited %d", ws.ExitStatus())
	default:
		how = "ended, status unknown"
	}
	if sent != "" {
		return sent + ", then " + how
	}
	return how
}

// finishFacts completes the facts once the group is closed.
func (r *runner) finishFacts() *Facts {
	f := r.facts
	if f == nil {
		return nil
	}
	f.Ended = time.Now()
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	for _, l := range r.left {
		if l.done {
			ws, reaped := r.reaped[l.id.PID]
			l.out.EndedBy = endedBy(l.signal, ws, reaped)
		} else {
			l.out.EndedBy = "still running"
		}
		f.Leftovers = append(f.Leftovers, l.out)
	}
	res := &f.Resources
	res.Sources, res.Absent = map[string]string{}, map[string]string{}
	cg := r.groupResources(res)
	if res.CPUUserSeconds == nil {
		res.CPUUserSeconds, res.CPUSystemSeconds = report.Seconds(r.usage.user), report.Seconds(r.usage.system)
		res.Sources["cpu"] = reapedSource(r.complete())
	}
	if r.usage.n > 0 {
		res.MaxProcessRSSBytes = report.Ptr(r.usage.maxRSS)
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
	if res.PeakProcesses == nil {
		if cg {
			res.Absent["peak_processes"] = "the pids controller is not enabled in contain's cgroup, and contain does not scan when it has a cgroup"
		} else {
			res.PeakProcesses = report.Ptr(max(r.peak, 1))
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
