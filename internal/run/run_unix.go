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
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/hook"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/supervise"
	"github.com/contain-cli/contain/internal/track"
)

// Run starts COMMAND in a kill-on-close group, waits for it, then closes the
// group: SIGTERM to everything left, SIGKILL after the grace period. It
// returns only when nothing of the group is left.
func Run(o Options) (Result, error) {
	if !o.Detach {
		hook.WarnSkipped(o.hook(), nosigpipe.Stderr())
	}
	if o.Detach {
		return runDetached(o)
	}
	r := &runner{o: o, log: o.logger(), grp: noGroup{}, lim: noLimits{}, guard: noGuard{}, shim: noShim{}, procs: osProcs{}, self: os.Getpid(), ownPgrp: unix.Getpgrp(),
		events: make(chan waitEvent, 4), noKids: make(chan struct{})}
	r.sys = newOS(r)
	r.daemons = newDaemons(r)
	return lifecycle(r, o.Limits.Any(), o.Started)
}

type runner struct {
	o   Options
	log Logger
	// leftNames are the names of the leftovers the close asked to end
	// (Result.Leftovers).
	leftNames []string
	leftSeen  map[proc.ID]bool
	// sentKill: contain has sent a SIGKILL (or cgroup.kill): a member
	// reaped dead of SIGKILL since may be its doing, not the kernel's
	// OOM killer's (limiter.killedUnsent).
	sentKill atomic.Bool
	// leftPorts are what the leftovers listened on (readPorts).
	leftPorts leftoverPorts[proc.ID]
	nameLeft  bool // the close names them: COMMAND ended by itself (no timeout, stop or limit)
	// termSent are the processes a request to stop or the timeout sent
	// SIGTERM: the close does not send (nor say) it again.
	termSent map[proc.ID]bool
	self     int
	ownPgrp  int
	jc       *jobControl // COMMAND's share of contain's terminal
	// path is COMMAND's, found in $PATH by prepare (pathErr: why not)
	// while the crash guard starts.
	path    string
	pathErr error

	grp   group           // the kernel's hold on the session (noGroup: none)
	guard crashGuard      // the crash guard, a child of contain but no member of the group; noGuard: none
	shim  shimLink        // the subreaper between contain and COMMAND, where there is no cgroup (Linux); noShim: none
	reg   sessionRegistry // the session's members for contain reap, without a cgroup, and the daemons it spared
	// daemons is the run's side of --allow-daemons (daemons_unix.go):
	// noDaemons without it.
	daemons daemons

	pid      int // COMMAND; also its process group
	status   unix.WaitStatus
	mainDone bool
	more     bool // when COMMAND ended, some other child was still alive
	timedOut bool
	// heldOutside: a held session was told of a member outside its
	// cgroup (Hold): its close looks beyond the cgroup.
	heldOutside bool
	// selfStopped: contain has stopped the tree itself by SIGSTOP, to
	// end it (still, killGroup): a SIGSTOP of COMMAND from then on is
	// taken for contain's own (Ctrl-Z, SIGTSTP, still is followed).
	selfStopped atomic.Bool
	// phase is why the main loop (and then the close) ends processes, for
	// the report's ended_by_contain: report.PhaseTimeout, ...; only the
	// main loop's goroutine, and the close after it, use it.
	phase string

	trackMu sync.Mutex
	track   *track.Tracker   // every process COMMAND started, as scans see them
	told    map[proc.ID]bool // members the guard was told of

	sigs      chan os.Signal
	laterDone chan struct{}  // closed once signals.ForwardedLater is subscribed too
	caughtAll bool           // the first subscription has signals.ForwardedLater already
	events    chan waitEvent // from the reaper: COMMAND stopped or ended
	noKids    chan struct{}  // closed by the reaper once contain has no child left

	// sys is what the OS supplies (osHooks), with the OS's own state:
	// linuxOS or darwinOS (newOS), where a test puts a fake.
	sys osHooks
	// procs is the process table the group is read from and signalled
	// through (procs_unix.go): osProcs, where a test puts a fake.
	procs procTable

	rec *account.Recorder // what the report says; nil: nothing is collected
	lim treeLimits        // the whole-tree limits: noLimits when none is asked
	ev  runEvents         // what the events need (events_unix.go)
}

// waitEvent is what the reaper reports about COMMAND.
type waitEvent struct {
	status unix.WaitStatus
	more   bool // with an exit: other children were alive at that moment
}

// The steps of the lifecycle (lifecycle.go) on Linux and macOS.

// prepare is the lifecycle's first step: the layers, the crash guard
// (waited for when limits will change what it must undo), and this
// goroutine on its thread.
func (r *runner) prepare(undo *cleanups) ([]string, error) {
	if r.o.OnTimeout != "" && r.o.Grace > 0 && !haveShell() {
		// Said before anything runs: at the timeout it would be too late.
		return nil, fmt.Errorf("--on-timeout needs %s to run its command, and there is none", binSh)
	}
	layers := r.prepareLayers(undo)
	if r.o.Limits.Any() {
		// The limits change what a guard must undo should contain die
		// (controllers enabled, a systemd scope): it waits first.
		r.guardReady()
	}
	// Pdeathsig fires when the thread that forked the child exits, not when
	// the process does (golang/go#27505): this goroutine stays on its thread
	// from the fork until the last child is reaped.
	if r.o.Prepared == nil || !r.o.Prepared.inInit {
		runtime.LockOSThread()
		undo.add(runtime.UnlockOSThread)
	}
	return layers, nil
}

// start binds the claim socket for --allow-daemons (before COMMAND can
// run contain run -d), then starts COMMAND; a held session (Hold) starts
// nothing and says where its processes are to start.
func (r *runner) start(*cleanups) (int, error) {
	r.daemons.bind()
	if r.o.Hold {
		if r.o.Held != nil {
			r.o.Held(r.sys.heldIn())
		}
		return 0, nil
	}
	if err := r.startCommand(); err != nil {
		return 0, err
	}
	return r.pid, nil
}

// abandon removes the group made for a run that did not start.
func (r *runner) abandon() { r.grp.remove() }

// prepareLayers readies what must be in place before COMMAND starts: the signal
// subscription (so that no signal that would end contain comes between
// the start and the loop), the crash guard, the recorder, the OS's layers
// and the terminal. It returns the layers.
func (r *runner) prepareLayers(undo *cleanups) []string {
	sigs, subscribed, all := takeSubscription()
	r.sigs, r.caughtAll = sigs, all
	// What needs no guard is done first, while it starts.
	if !r.o.Hold {
		r.path, r.pathErr = lookPath(r.o.Args[0])
	}
	r.sys.planLayers()
	r.rec = account.New(r.o.Collect)
	r.jc = &jobControl{own: r.ownPgrp, log: r.log, orphaned: func() bool { return orphanedPgrp(r.ownPgrp) },
		stopSelf: func(sig syscall.Signal) { unix.Kill(r.self, sig) }, signalGroup: r.signalGroup}
	if !r.o.NoTerminal {
		if t := openTerminal(); t != nil {
			undo.add(t.close)
			r.jc.tty = t
		}
	}
	if r.o.Prepared == nil {
		undo.add(func() {
			if r.laterDone != nil {
				<-r.laterDone // else it could subscribe after the Stop
			}
			signal.Stop(r.sigs)
		})
	}
	if g := r.takeGuard(); g != nil {
		undo.add(g.Stop)
		r.guard = withGuard{g}
	}
	layers := append([]string{"process group"}, r.sys.setUp()...)
	<-subscribed
	return layers
}

// begin follows COMMAND once it runs: the guard learns of it, the registry
// and the tracker start from it, and -v says what holds it.
func (r *runner) begin(layers []string, undo *cleanups) {
	since := proc.StartOf(r.pid)
	if r.o.Hold {
		// No COMMAND: the session's processes start after the holder.
		since = proc.StartOf(r.self)
	} else if err := r.guard.Command(r.pid, since); err != nil {
		// The guard learns COMMAND first: should contain die now,
		// COMMAND is the one the guard leaves its -s signal to act on.
		r.log("cannot tell the crash guard COMMAND's process group: %v", err)
	}
	// Without a cgroup, what the scans find is also written where contain
	// reap can read it should contain, its shim and its guard all be
	// killed: a process that wrote over its environment shows no tag.
	// With one, the registry is made when a daemon is first spared
	// (--allow-daemons): the daemon leaves the cgroup, and the registry is
	// where reap finds it.
	r.track = track.New(r.self, r.pid, since, r.o.Tag)
	r.reg.tag, r.reg.pid, r.reg.since = r.o.Tag, r.pid, since
	if !r.sys.strong() {
		r.reg.open(r.log)
		if ino, _ := r.sys.marker(); ino != 0 {
			if err := r.reg.Marker(ino); err != nil {
				r.log("cannot write the session's marker to the registry: %v", err)
			}
		}
	}
	undo.add(func() { r.reg.close(r.daemons.spared(), r.log) })
	r.track.TagOf, r.track.SidOf = track.TagReader(r.o.Tag), proc.SessionOf
	// Where the marker was placed (no cgroup), a scan finds by it what
	// dropped every other link, and so does the crash guard's.
	var ino uint64
	ino, r.track.Marker = r.sys.marker()
	if ino != 0 {
		if err := r.guard.Marker(ino); err != nil {
			r.log("cannot tell the crash guard the session's marker: %v", err)
		}
	}
	// Where the kernel keeps each process's parent at fork (macOS), a
	// scan finds by it what was re-parented before a scan saw it.
	r.track.UniqueIDs = track.LineageReader()
	if r.track.UniqueIDs != nil {
		r.track.Learned = func(ids proc.MacIDs) {
			if err := r.guard.Lineage(ids); err != nil {
				r.log("cannot tell the crash guard a member's lineage: %v", err)
			}
			if err := r.reg.Lineage(ids.UniqueID, ids.IDVersion); err != nil {
				r.log("cannot write a member's lineage to the registry: %v", err)
			}
		}
	}
	if r.o.Hold {
		r.track.NoAdopter(r.self)
	}
	r.daemons.judge(r.track)
	r.told = map[proc.ID]bool{}
	if pid := r.guard.PID(); pid != 0 {
		r.track.Skip[pid] = true
		r.log("crash guard: PID %d, waiting in %s", pid, r.guard.Waiter())
	}
	if g := r.grp.name(); g != "" {
		layers = append(layers, g)
	} else {
		layers = append(layers, "tracking")
	}
	layers = append(layers, r.sys.started()...)
	if r.o.Hold {
		r.log("holding session %s; containment: %s", r.o.Tag, strings.Join(layers, ", "))
	} else {
		r.log("started %s as PID %d; containment: %s", r.o.Args[0], r.pid, strings.Join(layers, ", "))
	}
	r.rec.Started(layers)
	r.emitStarted(layers)
}

// supervise runs the run: the later signals subscribed (unless sigcatch
// caught them with the first), the watcher, the
// main loop until COMMAND ends, then the close; the reaper here, on the
// thread that forked COMMAND, until no child of contain is left.
func (r *runner) supervise() {
	closed := make(chan struct{})
	r.laterDone = make(chan struct{})
	if r.caughtAll {
		close(r.laterDone)
	} else {
		go func() {
			signal.Notify(r.sigs, signals.ForwardedLater...)
			close(r.laterDone)
		}()
	}
	stopWatch := r.watch()
	defer r.daemons.listen()()
	stopEnforce := r.lim.enforce()
	go func() {
		r.waitMain()
		stopEnforce()
		stopWatch()
		r.lim.kernelOutcome()
		r.emitKernelLimits()
		r.jc.restore()
		// Asked before the close, which has a phase of its own.
		killed := r.status.Signaled() || r.phase != ""
		r.closeGroup()
		if killed {
			// After the close: nothing of the group is left to change
			// them again.
			r.jc.putBack()
		}
		r.noteUntold()
		close(closed)
	}()
	if r.o.Hold {
		// What the session holds are no children of this process: there
		// is nothing to reap.
		close(r.noKids)
	} else {
		r.reap()
	}
	<-closed
	// A limit holds until the last process is gone: where the shim holds
	// the tree, its end (not the close) says that nothing is left.
	r.lim.stop()
}

// result is how COMMAND ended, with the facts when collected.
func (r *runner) result() Result {
	res := Result{Pid: r.pid, TimedOut: r.timedOut, Facts: r.finishFacts(), Leftovers: r.leftNames}
	r.lim.finish(&res)
	switch {
	case r.status.Exited():
		res.Exited, res.Code = true, r.status.ExitStatus()
	case r.status.Signaled():
		res.Signaled, res.Signal = true, syscall.Signal(r.status.Signal())
	}
	return res
}

// takeGuard takes the crash guard that PrepareRun started and tells it the
// session, before anything of the session exists (cgroup, COMMAND).
func (r *runner) takeGuard() *guard.Guard {
	if r.o.Prepared == nil {
		r.log("run from another program than contain: no crash guard")
		return nil
	}
	g := r.o.Prepared.takeGuard(r.log)
	if g == nil {
		return nil
	}
	if err := r.sys.guardable(); err != nil {
		r.log("%v: no crash guard (if contain is killed, run contain reap)", err)
		g.Stop()
		return nil
	}
	if err := g.Watch(r.o.Tag, r.o.Grace, r.o.Log != nil, r.o.Signal, guardSignalsCommand()); err != nil {
		r.log("cannot brief the crash guard: %v (if contain is killed, run contain reap)", err)
		g.Stop()
		return nil
	}
	if r.o.Report != "" {
		if err := g.ReportTo(guard.ReportOrder{Path: r.o.Report, Command: r.o.Args, Started: time.Now()}); err != nil {
			r.log("cannot tell the crash guard where the report goes: %v", err)
		}
	}
	return g
}

// guardReady makes sure that the crash guard waits before COMMAND can
// start: guard.Start may have left its waiter executing, beside contain's
// own set-up.
func (r *runner) guardReady() {
	failed, err := r.guard.Ready()
	switch {
	case err != nil:
		r.log("cannot start the crash guard: %v (if contain is killed, run contain reap)", err)
		r.guard = noGuard{}
	case failed != nil:
		r.log("the built-in waiter could not run (%v): the crash guard waits in %s", failed, r.guard.Waiter())
	}
}

// startCommand starts COMMAND in its own process group, in the terminal's
// foreground when contain is, and adds what the OS has (on Linux the
// shim, Pdeathsig and the cgroup, with a retry without a cgroup the kernel
// refuses).
func (r *runner) startCommand() error {
	path, err := r.path, r.pathErr
	if err != nil {
		return &StartError{Name: r.o.Args[0], Err: err}
	}
	argv := r.o.Args
	// Decided once: a first try that fails to exec (a script without #!)
	// has already given the terminal to its own group, now gone.
	foreground := r.jc.handOver()
	for {
		if done, err := r.sys.startUnder(path, foreground); done {
			if err != nil && foreground {
				r.jc.takeBack() // the shim's child may have taken it
			}
			return err
		}
		attr := &syscall.SysProcAttr{Setpgid: true}
		if foreground {
			attr.Foreground, attr.Ctty = true, r.jc.tty.ctty()
		}
		r.sys.startAttr(attr)
		pid, err, execErr := r.sys.forkCommand(path, argv, attr)
		if err != nil && attr.Foreground {
			// The child may have taken the terminal before its exec
			// failed: it goes back to contain's group.
			r.jc.takeBack()
		}
		if errors.Is(err, unix.ENOEXEC) && argv[0] != binSh && haveShell() {
			// A script without #!: run by the shell, as execvp does (and
			// where there is none, "exec format error").
			path, argv = binSh, append([]string{binSh, path}, r.o.Args[1:]...)
			continue
		}
		if err != nil && !execErr && r.sys.startRefused(err) {
			continue
		}
		if err != nil {
			return &StartError{Name: r.o.Args[0], Err: err}
		}
		r.pid = pid
		r.jc.started(attr.Foreground)
		return nil
	}
}

// binSh runs what has no interpreter of its own: a script without #! (as
// execvp does) and the --on-timeout command. A distroless image has none.
// It is executed as /bin/sh, its argv[0] naming it: a multi-call binary
// (busybox) picks the program it runs by that name.
const binSh = "/bin/sh"

// haveShell reports whether there is a /bin/sh to execute.
func haveShell() bool { return unix.Access(binSh, unix.X_OK) == nil }

// lookPath finds COMMAND as execvp(3) does: a name with a slash as it is,
// anything else in $PATH (a relative directory in $PATH included, which
// exec.LookPath refuses). A name that $PATH holds only as something that
// cannot be executed — `contain run -- .` finds a directory — cannot be
// run (126), as with execvp, rather than not found (127).
func lookPath(name string) (string, error) {
	if name == "" {
		// execvp(""): ENOENT, as GNU timeout says it (127); not the
		// first directory of $PATH, which the loop below would find.
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
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
//
// With --allow-daemons, once COMMAND has ended, it also returns when the
// only children left are daemons it spared (re-parented to contain, the
// subreaper): they are no part of the group, and outlive contain.
func (r *runner) reap() {
	defer close(r.noKids)
	pid := r.pid
	commandDone := false
	var poll *proc.Backoff
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		flags := unix.WUNTRACED
		if commandDone && r.o.AllowDaemons {
			flags |= unix.WNOHANG
		}
		wpid, name, err := r.sys.reapWait(&ws, flags, &ru)
		if err == nil && wpid > 0 && !proc.StoppedStatus(ws) {
			r.reapedOne(wpid, name, ws, &ru)
		}
		switch {
		case err == unix.EINTR:
		case err != nil: // ECHILD
			return
		case wpid == 0: // WNOHANG: none has ended
			if r.daemons.onlySpared() {
				return
			}
			if poll == nil {
				poll = proc.NewBackoff()
			}
			time.Sleep(min(poll.Next(), 50*time.Millisecond))
		case proc.StoppedStatus(ws):
			if wpid == pid {
				r.events <- waitEvent{status: ws}
			}
		case wpid == pid:
			more := r.reapReady()
			if !more {
				r.endGuardEarly()
			}
			r.events <- waitEvent{status: ws, more: more}
			if !more {
				return
			}
			commandDone = true
		case r.sys.shimEnded(wpid, ws):
			// COMMAND was the shim's child: what contain has now are the
			// orphans the shim left it, spared daemons among them.
			commandDone = true
		default:
			r.log("reaped adopted process %d (%s)", wpid, name)
		}
	}
}

// endGuardEarly: COMMAND has ended and no child of contain is left. Where
// the kernel's group then goes at once (a cgroup of the run's own) and the
// guard has nothing else to do should contain die now (no report to
// write, no daemons, no limits, no -v to say so), the guard is killed
// here, on the reaper's thread: it takes about 0.1 ms to end, most of it
// to be woken on its CPU, and that now passes during the close instead
// of after it. Stop reaps it, before contain exits: a guard left to end
// after contain would be re-parented, to an outer contain run or a
// service manager among others.
func (r *runner) endGuardEarly() {
	if !r.guard.guarding() || r.o.Collect || r.o.Report != "" || r.o.Log != nil || r.o.AllowDaemons ||
		r.o.Limits.Any() || r.o.OnTimeout != "" {
		return
	}
	if r.sys.removeEmptyGroup() {
		r.guard.Kill()
	}
}

// reapedOne counts a process contain reaped, for the report.
func (r *runner) reapedOne(pid int, name string, ws unix.WaitStatus, ru *unix.Rusage) {
	r.rec.ReapedOne(pid, r.pid, ws, ru)
	r.lim.reaped(ru)
	if ws.Signaled() && ws.Signal() == unix.SIGKILL && !r.sentKill.Load() {
		r.lim.killedBy(pid, name, ru)
	}
}

// reapReady reaps the children that have already ended and reports whether
// any is still alive.
func (r *runner) reapReady() (alive bool) {
	var name string
	return proc.ReapEnded(func(ws *unix.WaitStatus, ru *unix.Rusage) (pid int, err error) {
		pid, name, err = r.sys.reapWait(ws, unix.WNOHANG, ru)
		return pid, err
	}, func(pid int, ws unix.WaitStatus, ru *unix.Rusage) {
		r.reapedOne(pid, name, ws, ru)
		r.log("reaped adopted process %d (%s)", pid, name)
	})
}

// waitMain runs until COMMAND has ended and is reaped. The portable loop
// (package supervise) decides what to do about the timeout, a request to
// stop and a limit; here are its events (COMMAND's stops and end, the
// signals, the limits found exceeded) and, in loopSys, its acts.
func (r *runner) waitMain() {
	l := &supervise.Loop[limit.Hit]{Timeout: r.o.Timeout, KillAfter: r.o.KillAfter, Grace: r.o.Grace,
		Hook: r.o.OnTimeout != "", Sys: loopSys{r}, Timing: r.o.timing()}
	// A source only for what was asked: each is a case of every select.
	sources := []supervise.Source[limit.Hit]{supervise.From(r.events, r.waitEvent), supervise.From(r.sigs, r.signalEvent)}
	if r.o.Limits.Any() {
		sources = append(sources, supervise.From(r.lim.hits(), func(o limit.Hit) supervise.Event[limit.Hit] {
			return supervise.Event[limit.Hit]{Kind: supervise.Limit, CPUTime: o.Kind == limit.CPUTime, Hit: o}
		}))
	}
	if r.o.Hold {
		sources = append(sources, supervise.From(r.o.Members, func(id proc.ID) supervise.Event[limit.Hit] {
			return supervise.Event[limit.Hit]{Kind: supervise.Other, Do: func() { r.adopt(id) }}
		}))
	}
	if r.o.Close != nil {
		sources = append(sources, supervise.From(r.o.Close, func(struct{}) supervise.Event[limit.Hit] {
			return supervise.Event[limit.Hit]{Kind: supervise.Stop, Name: CloseRequest, Do: func() {
				if r.o.Hold {
					r.holdEnds(CloseRequest)
					return
				}
				r.log("%s: sending SIGTERM to the group", CloseRequest)
				r.endGroup(unix.SIGTERM)
			}}
		}))
	}
	l.Run(sources...)
	r.timedOut = l.TimedOut
	r.rec.LoopEnded(l.ToldToStop, l.KilledAfterTimeout)
}

// waitEvent is what the reaper says of COMMAND, for the loop: a stop
// (followed, or not, by commandStopped), or its end.
func (r *runner) waitEvent(ev waitEvent) supervise.Event[limit.Hit] {
	if proc.StoppedStatus(ev.status) {
		return supervise.Event[limit.Hit]{Kind: supervise.Other, Do: func() {
			if sig := syscall.Signal(ev.status >> 8 & 0xff); !r.ourStop(sig) {
				r.jc.commandStopped(r.pid, sig)
			}
		}}
	}
	return supervise.Event[limit.Hit]{Kind: supervise.Ended, Do: func() {
		r.status, r.more, r.mainDone = ev.status, ev.more, true
		r.ev.commandEnded.Store(true)
		r.rec.CommandEnded()
	}}
}

// signalEvent is a signal contain received, for the loop: the stop
// requests are forwarded and end the group a grace period later, SIGALRM
// times out now, SIGCONT resumes, anything else is forwarded.
func (r *runner) signalEvent(s os.Signal) supervise.Event[limit.Hit] {
	sig := s.(syscall.Signal)
	name := signals.Name(sig)
	switch {
	case stopRequest(sig):
		return supervise.Event[limit.Hit]{Kind: supervise.Stop, Name: name, Do: func() {
			if r.o.Hold {
				r.holdEnds("received " + name)
				return
			}
			r.log("received %s: forwarding it to the group", name)
			r.endGroup(sig)
		}}
	case sig == unix.SIGCONT:
		return supervise.Event[limit.Hit]{Kind: supervise.Other, Do: func() {
			r.jc.resumed(r.pid)
			r.emitForwarded(sig)
		}}
	case sig == unix.SIGALRM:
		return supervise.Event[limit.Hit]{Kind: supervise.TimeOutNow, Name: "received SIGALRM: timing out now"}
	default:
		return supervise.Event[limit.Hit]{Kind: supervise.Other, Do: func() {
			r.log("received %s: forwarding it to the group", name)
			r.signalGroup(sig)
			r.emitForwarded(sig)
		}}
	}
}

// adopt makes a process its starter says it started in a held session a
// member (Hold): the tracker keeps it, and its descendants, whatever its
// environment shows from then on, and the crash guard and the registry
// learn of it.
func (r *runner) adopt(id proc.ID) {
	if id.PID <= 1 || id.Start == 0 {
		return
	}
	if r.sys.strong() && r.grp.holds(id.PID) != nil {
		// Started beside the cgroup: the close must look for the session
		// beyond it.
		r.heldOutside = true
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	r.track.RememberAs(id.PID, id.Start, "started in the session")
	r.log("started in the session: %d", id.PID)
	if err := r.reg.Member(id.PID, id.Start); err != nil {
		r.log("cannot write %d to the registry: %v", id.PID, err)
	}
	if r.guard.guarding() && !r.told[id] {
		r.told[id] = true
		if err := r.guard.Member(id.PID, id.Start); err != nil {
			r.log("cannot tell the crash guard of %d: %v", id.PID, err)
		}
	}
}

// holdEnds ends a held session's main loop (Hold): there is no COMMAND
// to wait for, so what ends the loop is the request to stop itself, and
// the close that follows ends every process of the session, SIGTERM
// first, SIGKILL after the grace period, as it does a run's leftovers.
// Once only: a second request finds the loop ended.
func (r *runner) holdEnds(why string) {
	if r.mainDone {
		return
	}
	// What the starter told before it asked to close is taken first: the
	// loop's select may have picked the request to close before it.
	for pending := true; pending; {
		select {
		case id := <-r.o.Members:
			r.adopt(id)
		default:
			pending = false
		}
	}
	r.log("%s: closing the session", why)
	select {
	case r.events <- waitEvent{more: r.heldOutside}:
	default:
	}
}

// loopSys carries out what the loop decides, on the group.
type loopSys struct{ r *runner }

func (s loopSys) SetPhase(phase string) { s.r.phase = phase }

func (s loopSys) Kill(why string) {
	if why == "" {
		s.r.log("killing the group")
	} else {
		s.r.log("%s: sending SIGKILL to the group", why)
	}
	s.r.killGroup()
	if s.r.o.Hold {
		s.r.holdEnds("killed")
	}
}

// Hook runs the --on-timeout command: contain's child, yet no member of
// the group, and known to the crash guard while it runs.
func (s loopSys) Hook(why string) {
	r := s.r
	r.log("%s: running the --on-timeout command before the timeout signal", why)
	hook.Run(r.o.hook(), os.Environ(), r.pid, r.self, func(command string, env []string) (hook.Process, error) {
		return hook.Start(command, env, func(pid int, start uint64) {
			// The tracker's rule for the orphans contain adopts must
			// not take it.
			r.trackMu.Lock()
			r.track.Skip[pid] = true
			r.trackMu.Unlock()
			// Should contain die while it runs, the guard ends it:
			// told before the hook goes past its gate.
			if err := r.guard.Hook(pid, start); err != nil {
				r.log("on-timeout: cannot tell the crash guard of it: %v", err)
			}
		})
	})
	r.guard.HookEnded()
}

// Signal sends the timeout signal to the group. A stopped process would
// not act on it until continued, as in GNU timeout: SIGCONT follows.
func (s loopSys) Signal(why string) string {
	r := s.r
	name := signals.Name(r.o.Signal)
	r.log("%s: sending %s to the group", why, name)
	if r.o.Signal == 0 {
		return "sent no signal (-s 0)"
	}
	r.endGroup(r.o.Signal)
	if r.o.Signal != unix.SIGKILL && r.o.Signal != unix.SIGCONT {
		r.signalGroup(unix.SIGCONT)
	}
	if r.o.Hold {
		r.holdEnds(why) // a limit's: the session ends
	}
	return "sent the timeout signal " + name
}

func (s loopSys) Exceeded(o limit.Hit, timeOut func(string) string) bool {
	return s.r.lim.exceeded(o, timeOut)
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
