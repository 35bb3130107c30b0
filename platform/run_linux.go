package platform

import (
	"errors"
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

	"github.com/contain-cli/contain/procfs"
	"github.com/contain-cli/contain/tag"
)

// forwarded are the signals contain passes on to the whole group: every
// signal whose default action ends a process, as GNU timeout 9.10 lists
// them, the real-time ones, and WINCH and CONT. SIGALRM among them means
// "time out now".
//
// Subscribing costs the Go runtime a round trip between two threads per
// signal, the slowest step of contain run's set-up, so only the signals
// that people and programs send, and those the runtime would die of, are
// subscribed before COMMAND starts (forwardedFirst); the rest
// (forwardedLater), which a Go program ignores until it subscribes, are
// subscribed once COMMAND runs, beside the main loop. A signal among them
// that comes in the first moments is lost, not fatal.
//
// Left out, because the Go runtime keeps them: SIGPROF (its profiler), and
// signals 32 to 34 (glibc's and musl's own; 34 is SIGRTMIN as glibc and GNU
// timeout number it). Sent to contain, 34 ends it; the crash guard then
// ends the group.
var (
	forwardedFirst = []os.Signal{unix.SIGALRM, unix.SIGINT, unix.SIGQUIT, unix.SIGHUP, unix.SIGTERM,
		unix.SIGPIPE, unix.SIGUSR1, unix.SIGUSR2, unix.SIGABRT,
		// Without a round trip: the runtime handles these itself.
		unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS}
	forwardedLater = laterSignals()
)

// laterSignals are WINCH and CONT, ignored by default, and the terminating
// signals that people and programs seldom send.
func laterSignals() []os.Signal {
	sigs := []os.Signal{unix.SIGWINCH, unix.SIGCONT,
		unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM, unix.SIGPOLL, unix.SIGPWR}
	for s := rtMin + 1; s <= rtMax; s++ {
		sigs = append(sigs, syscall.Signal(s))
	}
	return sigs
}

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
func Run(o RunOptions) (Result, error) {
	if o.Detach {
		return runDetached(o)
	}
	r := &runner{o: o, log: o.logger(), self: os.Getpid(), ownPgrp: unix.Getpgrp(),
		events: make(chan waitEvent, 4), noKids: make(chan struct{})}
	return r.run()
}

type runner struct {
	o       RunOptions
	log     Logger
	self    int
	ownPgrp int
	cg      *cgroup
	tty     *terminal
	gaveTTY bool // COMMAND's group was given the terminal at some point

	waitFlags int    // WNOTHREAD: the guard, a child of another thread, is not waited for
	guard     *guard // the crash guard, a child of contain but no member of the group; nil: none

	pid      int // COMMAND; also its process group
	status   unix.WaitStatus
	mainDone bool
	more     bool // when COMMAND ended, some other child was still alive
	stopped  bool // COMMAND is stopped (Ctrl-Z) and so is contain
	timedOut bool

	sigs   chan os.Signal
	events chan waitEvent // from the reaper: COMMAND stopped or ended
	noKids chan struct{}  // closed by the reaper once contain has no child left
}

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

	layers := []string{"process group", "pdeathsig"}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		r.log("cannot become a child subreaper: %v (double-forked processes will not be found)", err)
	} else {
		layers = append(layers, "subreaper")
	}
	if r.tty = openTerminal(); r.tty != nil {
		defer r.tty.close()
	}
	if cg, err := newCgroup(r.self); err != nil {
		r.log("%v (falling back to process group, subreaper and pdeathsig)", err)
	} else {
		r.cg = cg
	}
	<-subscribed

	// Pdeathsig fires when the thread that forked the child exits, not when
	// the process does (golang/go#27505): this goroutine stays on its thread
	// from the fork until the last child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := r.start(); err != nil {
		if r.cg != nil {
			r.cg.remove()
		}
		return Result{}, err
	}
	if r.guard != nil {
		since := uint64(0)
		if st, err := readStat(r.pid, nil); err == nil {
			since = st.Start
		}
		if err := r.guard.command(r.pid, since); err != nil {
			r.log("cannot tell the crash guard COMMAND's process group: %v", err)
		}
		r.log("crash guard: PID %d", r.guard.pid)
	}
	if r.cg != nil {
		layers = append(layers, "cgroup "+r.cg.dir)
	}
	r.log("started %s as PID %d; containment: %s", r.o.Args[0], r.pid, strings.Join(layers, ", "))
	closed := make(chan struct{})
	laterDone = make(chan struct{})
	go func() {
		signal.Notify(r.sigs, forwardedLater...)
		close(laterDone)
	}()
	go func() {
		r.waitMain()
		r.restoreTerminal()
		r.closeGroup()
		close(closed)
	}()
	r.reap()
	<-closed

	res := Result{Pid: r.pid, TimedOut: r.timedOut}
	switch {
	case r.status.Exited():
		res.Exited, res.Code = true, r.status.ExitStatus()
	case r.status.Signaled():
		res.Signaled, res.Signal = true, syscall.Signal(r.status.Signal())
	}
	return res, nil
}

// takeGuard takes the crash guard that PrepareRun started and tells it the
// session, before anything of the session exists (cgroup, COMMAND). The
// reaper then waits with __WNOTHREAD, so that the guard, a child of another
// thread, is not among the children it waits for.
func (r *runner) takeGuard() *guard {
	if !preparedByMain {
		r.log("run from another program than contain: no crash guard")
		return nil
	}
	g := takeGuard(r.log)
	if g == nil {
		return nil
	}
	if unix.Gettid() != r.self {
		r.log("not on the main thread: no crash guard (if contain is killed, run contain reap)")
		g.stop()
		return nil
	}
	if err := g.watch(r.o.Tag, r.o.Grace, r.o.Log != nil); err != nil {
		r.log("cannot brief the crash guard: %v (if contain is killed, run contain reap)", err)
		g.stop()
		return nil
	}
	r.waitFlags = unix.WNOTHREAD
	return g
}

// start starts COMMAND in its own process group, inside the cgroup when
// there is one, with Pdeathsig. A clone into the cgroup that the kernel
// refuses (no permission on a common ancestor, a threaded or busy group)
// falls back to starting without it.
func (r *runner) start() error {
	path, err := lookPath(r.o.Args[0])
	if err != nil {
		return &StartError{Name: r.o.Args[0], Err: err}
	}
	argv := r.o.Args
	const shell = "/bin/sh"
	for {
		// When contain dies, COMMAND first gets the timeout signal, as
		// from GNU timeout, so that it can clean up; the guard ends the
		// rest. Without a guard there is no second chance: SIGKILL.
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if r.guard != nil {
			attr.Pdeathsig = r.o.Signal
		}
		if r.tty != nil && r.tty.foreground() == r.ownPgrp {
			attr.Foreground, attr.Ctty = true, r.tty.fd
		}
		if r.cg != nil {
			attr.UseCgroupFD, attr.CgroupFD = true, r.cg.fd
		}
		// syscall.ForkExec, not os/exec: os.StartProcess first probes
		// whether clone can return a pidfd by starting a throwaway child,
		// a tenth of contain run -- true.
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: r.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
		if errors.Is(err, unix.ENOEXEC) && argv[0] != shell {
			// A script without #!: run by the shell, as execvp does.
			path, argv = shell, append([]string{shell, path}, r.o.Args[1:]...)
			continue
		}
		if err != nil && r.cg != nil && cgroupRefusal(err) {
			r.log("cannot start inside cgroup %s: %v (retrying without it)", r.cg.dir, err)
			r.cg.remove()
			r.cg = nil
			continue
		}
		if err != nil {
			return &StartError{Name: r.o.Args[0], Err: err}
		}
		r.pid, r.gaveTTY = pid, attr.Foreground
		return nil
	}
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

// cgroupRefusal reports whether a start error may come from the kernel
// refusing CLONE_INTO_CGROUP. exec errors can look the same (EACCES); a
// retry without the cgroup then fails the same way and is reported as is.
func cgroupRefusal(err error) bool {
	for _, e := range []error{unix.EACCES, unix.EPERM, unix.EBUSY, unix.EOPNOTSUPP, unix.ENOSYS, unix.EINVAL, unix.EROFS, unix.ENODEV} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
		wpid, err := unix.Wait4(-1, &ws, unix.WUNTRACED|r.waitFlags, nil)
		switch {
		case err == unix.EINTR:
		case err != nil: // ECHILD
			return
		case ws.Stopped():
			if wpid == pid {
				r.events <- waitEvent{status: ws}
			}
		case wpid == pid:
			more := r.reapReady()
			r.events <- waitEvent{status: ws, more: more}
			if !more {
				return
			}
		default:
			r.log("reaped adopted process %d", wpid)
		}
	}
}

// reapReady reaps the children that have already ended and reports whether
// any is still alive.
func (r *runner) reapReady() (alive bool) {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WNOHANG|r.waitFlags, nil)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		case wpid == 0:
			return true
		default:
			r.log("reaped adopted process %d", wpid)
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
			if ev.status.Stopped() {
				r.commandStopped(ev.status.StopSignal())
			} else {
				r.status, r.more, r.mainDone = ev.status, ev.more, true
			}
		case s := <-r.sigs:
			sig := s.(syscall.Signal)
			switch {
			case stopRequest(sig):
				r.log("received %s: forwarding it to the group", SignalName(sig))
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
				r.log("received %s: forwarding it to the group", SignalName(sig))
				r.signalGroup(sig)
			}
		case <-timeoutC:
			r.timeout(false)
			if r.o.KillAfter > 0 && killC == nil {
				killC = time.After(r.o.KillAfter)
			}
		case <-killC:
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
		r.log("received SIGALRM: timing out now, sending %s to the group", SignalName(r.o.Signal))
	} else {
		r.log("timeout after %v: sending %s to the group", r.o.Timeout, SignalName(r.o.Signal))
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
		r.log("command stopped by %s", SignalName(sig))
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
			r.log("command stopped by %s, but contain's process group is orphaned (no job control): continuing it", SignalName(sig))
			r.signalGroup(unix.SIGCONT)
			return
		}
		r.log("command stopped by %s and the terminal is not contain's to give", SignalName(sig))
		return
	}
	r.stopped = true
	if r.tty.foreground() == r.pid {
		if err := r.tty.setForeground(r.ownPgrp); err != nil {
			r.log("cannot take the terminal back: %v", err)
		}
	}
	r.log("command stopped by %s: stopping contain too", SignalName(sig))
	unix.Kill(r.self, sig)
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
		st, err := readStat(pid, make([]byte, 1024))
		if err != nil {
			return false
		}
		pid = st.PPID
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
	start uint64 // 0: found only through the cgroup
}

// members lists every live process of the group: the descendants of contain
// (with contain a subreaper, that is every process COMMAND started), and
// whatever else is in the cgroup.
func (r *runner) members() []member {
	procs, err := scanProcs()
	if err != nil {
		r.log("cannot scan /proc: %v", err)
	}
	if r.guard != nil {
		delete(procs, r.guard.pid)
	}
	var out []member
	seen := make(map[int]bool)
	for _, st := range descendants(procs, r.self) {
		out = append(out, member{pid: st.PID, comm: st.Comm, start: st.Start})
		seen[st.PID] = true
	}
	if r.cg != nil {
		pids, err := r.cg.procs()
		if err != nil {
			r.log("cannot list cgroup %s: %v", r.cg.dir, err)
		}
		for _, pid := range pids {
			if !seen[pid] {
				out = append(out, member{pid: pid, comm: procs[pid].Comm})
			}
		}
	}
	return out
}

// signal sends sig to m through a pidfd, after checking that the PID still
// names the process that was seen.
func (r *runner) signal(m member, sig syscall.Signal) error {
	buf := make([]byte, 1024)
	return signalPinned(m.pid, sig, func() error {
		if m.start == 0 {
			return r.cg.contains(m.pid)
		}
		st, err := readStat(m.pid, buf)
		if err != nil {
			return err
		}
		if st.Start != m.start {
			return errIdentity
		}
		return nil
	})
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
			r.log("cannot send %s to %d (%s): %v", SignalName(sig), m.pid, m.comm, err)
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
		env, err := proc.Environ(m.pid, buf)
		if err == nil {
			buf = env[:0]
			if v, ok := procfs.Getenv(env, tag.Var); ok && v != r.o.Tag {
				if _, pid, err := tag.Parse(v); err == nil && pid != m.pid && in[pid] {
					continue
				}
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
	cgKilled := false
	if r.cg != nil {
		if err := r.cg.kill(); err != nil {
			r.log("cannot kill cgroup %s: %v", r.cg.dir, err)
		} else {
			cgKilled = true
		}
	}
	for _, m := range members {
		if err := r.signal(m, unix.SIGKILL); err == nil || cgKilled {
			r.log("killed %d (%s)", m.pid, m.comm)
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
	return r.cgroupPopulated()
}

// cgroupPopulated reports whether a live process is in the cgroup; an error
// reading it counts as yes, so that contain never returns early.
func (r *runner) cgroupPopulated() bool {
	if r.cg == nil {
		return false
	}
	pop, err := r.cg.populated()
	if err != nil {
		r.log("cannot read %s/cgroup.events: %v", r.cg.dir, err)
	}
	return pop || err != nil
}

// closeGroup runs after COMMAND ended: SIGTERM (and SIGCONT, for stopped
// processes) to everything left, SIGKILL to what is still there after the
// grace period, and return only when nothing is left. A stop request during
// the grace period kills at once.
func (r *runner) closeGroup() {
	defer func() {
		if r.cg != nil {
			if err := r.cg.remove(); err != nil {
				r.log("%v", err)
			}
		}
	}()
	// Nothing left is the common case: no child, and the cgroup (if any)
	// can be removed, which only an empty group can.
	if !r.more && (r.cg == nil || r.cg.tryRemove() == nil) {
		r.cg = nil
		return
	}
	wait := newBackoff()
	if r.o.Grace > 0 {
		deadline := time.Now().Add(r.o.Grace)
		type identity struct {
			pid   int
			start uint64
		}
		termed := make(map[identity]bool) // comm changes on exec; these do not
	grace:
		for {
			for _, m := range r.members() {
				if termed[identity{m.pid, m.start}] {
					continue
				}
				termed[identity{m.pid, m.start}] = true
				if err := r.signal(m, unix.SIGTERM); err == nil {
					r.log("sent SIGTERM to leftover %d (%s)", m.pid, m.comm)
					r.signal(m, unix.SIGCONT)
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
	wait = newBackoff()
	for r.anyLeft() {
		r.killGroup()
		r.pause(wait, time.Second)
	}
}

// pause waits until the last child is reaped, a stop request comes (then
// it returns true) or the next backoff step, whichever is first; other
// signals are forwarded.
func (r *runner) pause(b *backoff, limit time.Duration) (stop bool) {
	d := min(b.next(), max(limit, time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	noKids := r.noKids
	select {
	case <-noKids:
		if !r.cgroupPopulated() {
			return false
		}
		// Something outside contain's tree is still in the cgroup: only
		// the timer tells when to look again.
		<-t.C
	case <-t.C:
	case s := <-r.sigs:
		sig := s.(syscall.Signal)
		switch {
		case stopRequest(sig):
			r.log("received %s while closing: killing the group", SignalName(sig))
			return true
		case sig == unix.SIGALRM: // COMMAND has ended: nothing to time out
		default:
			r.signalGroup(sig)
		}
	}
	return false
}

// detachAttr starts a detached COMMAND in a new session.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

const detachedWhere = "in a new session"
