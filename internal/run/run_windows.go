package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/hook"
	"github.com/contain-cli/contain/internal/job"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/supervise"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// Run starts COMMAND inside a new kill-on-close Job Object, waits for it,
// then closes the group: CTRL_BREAK_EVENT to COMMAND's process group, and
// after the grace period the job is terminated. It returns only when the
// job is empty. If contain itself is ended however hard, the kernel closes
// its handle to the job and ends every process in it: no guard is needed.
// A held session (Hold) starts no COMMAND: its starter duplicates the
// job's handle (Held is told its value in this process) and starts each
// of its processes into the job; the session ends at a request to stop,
// and the close ends what is in the job.
func Run(o Options) (Result, error) {
	if !o.Detach {
		hook.WarnSkipped(o.hook(), nosigpipe.Stderr())
	}
	if o.Detach {
		return runDetached(o)
	}
	r := &winRunner{o: o, log: o.logger(), lim: noJobLimits{}, breaks: noBreakaways{}}
	r.sys = jobSys{r}
	return lifecycle(r, o.Limits.Any(), o.Started)
}

// PrepareRun catches the console's control events before COMMAND starts,
// so that contain cannot be ended by one before it has closed the job.
func PrepareRun() *Prepared { consoleEvents(); return &Prepared{} }

// PrepareRunInInit is PrepareRun (Windows runs contain run from main).
func PrepareRunInInit() *Prepared { return PrepareRun() }

type winRunner struct {
	o   Options
	log Logger
	// leftNames are the names of the leftovers the close asked to end
	// (Result.Leftovers).
	leftNames []string
	// leftPorts are what the leftovers listened on (readPorts).
	leftPorts leftoverPorts[int]
	sys       winSys // the job and the console, as the supervision and the close see them
	job       *job.Job
	cmd       *exec.Cmd
	proc      windows.Handle
	// killedBy is the signal COMMAND counts as ended by when contain
	// terminated the job while it ran: SIGKILL (137 after a timeout), or
	// the timeout signal when its event could not be delivered.
	killedBy syscall.Signal

	rec *account.Recorder // with RunOptions.Collect
	// phase is why the main loop (and then the close) ends processes,
	// for the report's ended_by_contain: report.PhaseTimeout, ...
	phase  string
	lim    jobTreeLimits // noJobLimits: no limit asked
	breaks breakaways    // *job.BreakWatch with --allow-daemons, else noBreakaways

	events   <-chan uint32     // the console's, from prepare
	timedOut bool              // the timeout (or the CPU time limit) fired
	left     []report.Leftover // processes that left the job: spared, or caught
	// ended ends the main loop: COMMAND's end, or in a held session the
	// request to stop (holdEnds).
	ended chan error
}

// winSys is what the Windows run asks of the OS while it supervises and
// closes the group: the job's processes, their console process groups,
// the console's events and COMMAND's state. jobSys is Windows'; a test
// fakes it (run_windows_test.go), so that the run's decisions (what is
// sent to which group, when the job is terminated, never an event to a
// group that names nothing) are tested without a process. The job's
// setting up, COMMAND's start, the limits and the report's facts use
// the job itself.
type winSys interface {
	pids() []int
	active() (int, error)
	terminate() error
	// group is a process's console process group (0 where Wine shows
	// none).
	group(pid int) (uint32, error)
	// event sends a console event to process group gid.
	event(ev, gid uint32) error
	// commandRunning: COMMAND has not ended (false in a held session).
	commandRunning() bool
	// unforward hands every limit message the job has posted to the
	// limits' reader, once the main loop is over.
	unforward()
}

// jobSys is winSys on Windows, on the run's job.
type jobSys struct{ r *winRunner }

func (s jobSys) pids() []int                 { return s.r.job.PIDs() }
func (s jobSys) active() (int, error)        { return s.r.job.Active() }
func (s jobSys) terminate() error            { return s.r.job.Terminate() }
func (jobSys) group(pid int) (uint32, error) { return proc.ProcessGroup(pid) }
func (jobSys) event(ev, gid uint32) error    { return windows.GenerateConsoleCtrlEvent(ev, gid) }
func (s jobSys) unforward()                  { s.r.job.Unforward() }
func (s jobSys) commandRunning() bool {
	if s.r.proc == 0 {
		return false
	}
	ev, _ := windows.WaitForSingleObject(s.r.proc, 0)
	return ev != windows.WAIT_OBJECT_0
}

// breakaways watches the processes that leave the job
// (job.BreakWatch, with --allow-daemons); noBreakaways: none may.
type breakaways interface {
	Begin(pid int)
	Finish() []report.Leftover
}

type noBreakaways struct{}

func (noBreakaways) Begin(int)                 {}
func (noBreakaways) Finish() []report.Leftover { return nil }

// cmdPID is COMMAND's PID, 0 in a held session (no COMMAND).
func (r *winRunner) cmdPID() int {
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// The steps of the lifecycle (lifecycle.go) on Windows.

// prepare catches the console's events and makes the job, kill on
// close, with breakaway for --allow-daemons.
func (r *winRunner) prepare(undo *cleanups) ([]string, error) {
	r.events = consoleEvents()
	undo.add(markClosed)
	j, err := job.New()
	if err != nil {
		return nil, err
	}
	r.job = j
	undo.add(func() { j.Close() })
	layers := []string{"job object (kill on close)", "console process group"}
	if r.o.AllowDaemons {
		if err := j.PermitBreakaway(); err != nil {
			return nil, fmt.Errorf("--allow-daemons: cannot let processes leave the job object (JOB_OBJECT_LIMIT_BREAKAWAY_OK): %w", err)
		}
		r.breaks = job.WatchBreakaway(j, r.log, r.o.Tag, r.o.Collect)
		undo.add(func() { r.breaks.Finish() })
		layers = append(layers, fmt.Sprintf("breakaway for marked daemons, checked every %v (--allow-daemons)", job.BreakawayEvery))
	}
	return layers, nil
}

// start listens for contain stop's event, then starts COMMAND in the
// job; a held session starts nothing and tells its starter the job's
// handle.
func (r *winRunner) start(undo *cleanups) (int, error) {
	undo.add(r.listenStop())
	if r.o.Hold {
		if r.o.Held != nil {
			r.o.Held(strconv.FormatUint(uint64(r.job.Handle()), 10))
		}
		r.log("holding a session of no command; containment: job object (kill on close), each process started into it by its starter")
		return 0, nil
	}
	cmd := exec.Command(r.o.Args[0], r.o.Args[1:]...)
	if cmd.Err != nil {
		return 0, &StartError{Name: r.o.Args[0], Err: cmd.Err}
	}
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = r.o.Env, os.Stdin, os.Stdout, os.Stderr
	h, err := startInJob(cmd, r.job, r.log)
	if err != nil {
		return 0, err
	}
	r.cmd, r.proc = cmd, h
	undo.add(func() { windows.CloseHandle(h) })
	r.log("started %s as PID %d; containment: job object (kill on close), console process group %d",
		r.o.Args[0], cmd.Process.Pid, cmd.Process.Pid)
	return cmd.Process.Pid, nil
}

// abandon: nothing of a job outlives its handle.
func (r *winRunner) abandon() {}

// begin starts the breakaway watch and the account.
func (r *winRunner) begin(layers []string, _ *cleanups) {
	if r.o.AllowDaemons {
		r.breaks.Begin(r.cmdPID())
		r.log("--allow-daemons: the job lets processes leave it; every %v, one that left it without %s=1 is put back (or terminated), a marked one is spared", job.BreakawayEvery, tag.DaemonVar)
	}
	r.rec = account.New(r.o.Collect)
	r.rec.Started(layers)
	r.o.Events.Emit(events.Started{PID: r.cmdPID(), Command: r.o.Args, Layers: layers, ContainPID: os.Getpid(), Held: r.o.Hold})
}

// supervise runs the main loop until COMMAND has ended, then closes the
// job.
func (r *winRunner) supervise() {
	r.ended = make(chan error, 1)
	if r.cmd != nil {
		go func() { r.ended <- r.cmd.Wait() }()
	}
	stopLimits := r.lim.enforce()
	r.timedOut = r.waitMain(r.ended, r.events)
	r.sys.unforward() // every limit message the job posted reaches the limits' reader
	stopLimits()
	r.rec.CommandEnded()
	r.lim.late()
	r.closeGroup(r.events)
	r.left = r.breaks.Finish()
	for _, l := range r.left {
		// The breakaway watch says them as it ends (package job).
		if l.Spared {
			r.o.Events.Emit(events.Daemon{PID: l.PID, Comm: l.Comm, Why: "marked RUNNING_PROCESS_IS_DAEMON=1 (--allow-daemons)"})
		}
	}
}

// result says how COMMAND ended, with the processes that left the job
// (spared, or caught) among the leftovers.
func (r *winRunner) result() Result {
	res := Result{Pid: r.cmdPID(), TimedOut: r.timedOut, Facts: r.finishFacts(), Leftovers: r.leftNames}
	if f := res.Facts; f != nil {
		for _, l := range r.left {
			if !slices.ContainsFunc(f.Leftovers, func(k report.Leftover) bool { return k.PID == l.PID }) {
				f.Leftovers = append(f.Leftovers, l) // not already noted in the job
			}
		}
	}
	r.lim.finish(&res)
	switch {
	case r.o.Hold: // each command's end is its starter's
	case r.killedBy != 0:
		res.Signaled, res.Signal = true, r.killedBy
	default:
		res.Exited, res.Code = true, r.cmd.ProcessState.ExitCode()
	}
	return res
}

// startInJob starts cmd in j, no instruction of it outside the job
// (job.Start); a command that could not be started at all is a
// StartError, for contain's exit status (126, 127).
func startInJob(cmd *exec.Cmd, j *job.Job, log Logger) (windows.Handle, error) {
	h, err := j.Start(cmd, log)
	var se *job.StartError
	if errors.As(err, &se) {
		return 0, &StartError{Name: cmd.Args[0], Err: se.Err}
	}
	return h, err
}

// waitMain runs until COMMAND has ended. The portable loop (package
// supervise) decides what to do about the timeout, a request to stop and
// a limit, as on Linux and macOS; here are its events (COMMAND's end, the
// console's events, the limits found exceeded) and, in loopSys, its acts.
// It reports whether the run timed out (or a CPU time limit acted as the
// timeout).
func (r *winRunner) waitMain(waited <-chan error, events <-chan uint32) (timedOut bool) {
	l := &supervise.Loop[limit.Hit]{Timeout: r.o.Timeout, KillAfter: r.o.KillAfter, Grace: r.o.Grace,
		Hook: r.o.OnTimeout != "", Sys: loopSys{r}, Timing: r.o.timing()}
	l.Run(supervise.From(waited, func(error) supervise.Event[limit.Hit] {
		return supervise.Event[limit.Hit]{Kind: supervise.Ended}
	}), supervise.From(events, r.consoleEvent), supervise.From(r.lim.hits(), func(h limit.Hit) supervise.Event[limit.Hit] {
		return supervise.Event[limit.Hit]{Kind: supervise.Limit, CPUTime: h.Kind == limit.CPUTime, Hit: h}
	}), supervise.From(r.o.Close, func(struct{}) supervise.Event[limit.Hit] {
		return supervise.Event[limit.Hit]{Kind: supervise.Stop, Name: CloseRequest, Do: func() {
			if r.o.Hold {
				r.holdEnds(CloseRequest)
				return
			}
			r.phase = report.PhaseStop
			r.log("%s: %s", CloseRequest, r.deliver(signals.Break))
		}}
	}))
	r.rec.LoopEnded(l.ToldToStop, l.KilledAfterTimeout)
	return l.TimedOut
}

// consoleEvent is a console event contain received, for the loop: Ctrl-C
// is COMMAND's to decide on (stopRequest), any other asks contain to stop;
// the console closing, a log-off or a shutdown leave at most closeGrace.
func (r *winRunner) consoleEvent(ev uint32) supervise.Event[limit.Hit] {
	do := func() { r.stopRequest(ev) }
	switch ev {
	case windows.CTRL_C_EVENT:
		return supervise.Event[limit.Hit]{Kind: supervise.Other, Do: do}
	case windows.CTRL_BREAK_EVENT, ctrlStop:
		return supervise.Event[limit.Hit]{Kind: supervise.Stop, Name: consoleEventName(ev), Do: do}
	default:
		return supervise.Event[limit.Hit]{Kind: supervise.Stop, Name: consoleEventName(ev), Do: do, Grace: closeGrace}
	}
}

// loopSys carries out what the loop decides, on the job.
type loopSys struct{ r *winRunner }

func (s loopSys) SetPhase(phase string) { s.r.phase = phase }

func (s loopSys) Kill(why string) {
	if why == "" {
		s.r.log("killing the job")
	} else {
		s.r.log("%s: terminating the job", why)
	}
	s.r.terminate(syscall.SIGKILL)
	if s.r.o.Hold {
		s.r.holdEnds("killed")
	}
}

// holdEnds ends a held session's main loop (Hold): there is no COMMAND
// to wait for, so what ends the loop is the request to stop itself, and
// the close that follows ends what is in the job, Ctrl-Break first, the
// job terminated after the grace period, as it ends a run's leftovers.
// Once only: a second request finds the loop ended.
func (r *winRunner) holdEnds(why string) {
	select {
	case r.ended <- nil:
		r.log("%s: closing the session", why)
	default:
	}
}

func (s loopSys) Hook(why string) {
	r := s.r
	r.log("%s: running the --on-timeout command before the timeout signal", why)
	hook.Run(r.o.hook(), os.Environ(), r.cmd.Process.Pid, os.Getpid(), hook.Start)
}

func (s loopSys) Signal(why string) string {
	did := s.r.deliver(s.r.o.Signal)
	s.r.log("%s: %s", why, did)
	return did
}

func (s loopSys) Exceeded(h limit.Hit, timeOut func(string) string) bool {
	return s.r.lim.exceeded(h, timeOut)
}

// stopRequest answers a console event received by contain and reports
// whether it asks contain to stop. Ctrl-C is not: the console sends it to
// every process attached to it, COMMAND's group included (its Ctrl-C
// handling was switched back on), so COMMAND already has it and decides,
// as it would without contain; contain only lives on to close the job.
// Ctrl-Break can be aimed at contain's group alone: it is passed on to
// COMMAND's group; contain stop (stop_windows.go) is taken as Ctrl-Break.
// The console closing, a log-off or a shutdown give a
// process a few seconds: COMMAND is asked to stop and the job is
// terminated within them.
func (r *winRunner) stopRequest(ev uint32) bool {
	if r.o.Hold && ev != windows.CTRL_C_EVENT {
		// The session's processes are its starter's to signal while it
		// runs: a request to stop closes the session.
		if ev != windows.CTRL_BREAK_EVENT && ev != ctrlStop {
			r.o.Grace = min(r.o.Grace, closeGrace)
		}
		r.holdEnds("received " + consoleEventName(ev))
		return true
	}
	switch ev {
	case windows.CTRL_C_EVENT:
		if r.o.Hold {
			r.log("received CTRL_C_EVENT: the session's processes have it too, as the console sends it")
			return false
		}
		if underWine() {
			// Wine delivers a console's Ctrl-C to the receiver's own
			// process group only (seen with Wine 8).
			r.log("received CTRL_C_EVENT: %s (Wine does not pass it on to other process groups)", r.deliver(syscall.SIGINT))
			return false
		}
		r.log("received CTRL_C_EVENT: the command's process group has it too")
		return false
	case windows.CTRL_BREAK_EVENT:
		r.phase = report.PhaseStop
		r.log("received CTRL_BREAK_EVENT: %s", r.deliver(signals.Break))
		return true
	case ctrlStop:
		r.phase = report.PhaseStop
		r.log("told to stop by contain stop (%s was set): %s", proc.StopEventName(os.Getpid()), r.deliver(signals.Break))
		return true
	default:
		r.phase = report.PhaseStop
		r.log("received %s: %s", consoleEventName(ev), r.deliver(signals.Break))
		r.o.Grace = min(r.o.Grace, closeGrace)
		return true
	}
}

// closeGrace bounds each grace period (the command's, then the
// leftovers') when the console closes, the user logs off or the system
// shuts down: Windows ends contain 5 s after such an event, and the job
// must be closed before.
const closeGrace = 1500 * time.Millisecond

// deliver asks COMMAND to stop the way sig means on Windows (see
// signal_windows.go) and says what was done. An event that cannot be
// delivered (contain has no console, or the event is not implemented)
// must not leave COMMAND running past its timeout: the job is terminated.
func (r *winRunner) deliver(sig syscall.Signal) string {
	var ev uint32
	switch sig {
	case 0:
		return "sending nothing (signal 0)"
	case syscall.SIGKILL:
		r.terminate(syscall.SIGKILL)
		return "terminated the job"
	case syscall.SIGINT:
		ev = windows.CTRL_C_EVENT
	default:
		ev = windows.CTRL_BREAK_EVENT
	}
	if r.o.Hold {
		return r.deliverAll(ev, sig)
	}
	if !r.groupExists() {
		r.terminate(sig)
		return "the command's process group has no process left to receive " + consoleEventName(ev) + ": terminated the job"
	}
	group := r.noteGroupEnding(consoleEventName(ev))
	if err := r.sys.event(ev, uint32(r.cmdPID())); err != nil {
		r.terminate(sig)
		return fmt.Sprintf("cannot send %s to the command's process group (%v): terminated the job", consoleEventName(ev), err)
	}
	r.o.Events.Emit(events.Signal{Signal: consoleEventName(ev), To: events.ToGroup, Group: r.cmdPID(), Why: signalWhy(r.phase)})
	return "sent " + consoleEventName(ev) + " to the command's process group" + group
}

// deliverAll is deliver in a held session, whose processes are in console
// process groups of their own (each command in its own): the event goes
// to each group that a process of the job is in, and the job is
// terminated where one cannot be reached.
func (r *winRunner) deliverAll(ev uint32, sig syscall.Signal) string {
	var groups []uint32
	for _, pid := range r.sys.pids() {
		// Group 0 is no group: an event sent to it reaches every process
		// of the console (Wine shows 0 for every process).
		if g, err := r.sys.group(pid); err == nil && g != 0 && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		r.terminate(sig)
		return "no process group of the job could be read to receive " + consoleEventName(ev) + ": terminated the job"
	}
	noted := r.noteGroupEnding(consoleEventName(ev))
	for _, g := range groups {
		// g is the group of a live process of the job: it names a group.
		if err := r.sys.event(ev, g); err != nil {
			r.terminate(sig)
			return fmt.Sprintf("cannot send %s to process group %d (%v): terminated the job", consoleEventName(ev), g, err)
		}
		r.o.Events.Emit(events.Signal{Signal: consoleEventName(ev), To: events.ToGroup, Group: int(g), Why: signalWhy(r.phase)})
	}
	return fmt.Sprintf("sent %s to the job's %d process groups%s", consoleEventName(ev), len(groups), noted)
}

// groupExists reports whether COMMAND's console process group still has a
// member: COMMAND itself, or a process of the job whose parameters name
// that group. A console event must never be sent to a group ID that names
// no group, which Windows may take for every process of the console, the
// shell that started contain included.
func (r *winRunner) groupExists() bool {
	if r.sys.commandRunning() {
		return true
	}
	gid := uint32(r.cmdPID())
	for _, pid := range r.sys.pids() {
		if g, err := r.sys.group(pid); err == nil && g == gid {
			return true
		}
	}
	return false
}

// terminate ends every process of the job. If COMMAND was still running,
// it counts as ended by sig.
func (r *winRunner) terminate(sig syscall.Signal) {
	var ended []events.Signal
	for _, pid := range r.sys.pids() {
		name := r.noteEnding(pid, "TerminateJobObject")
		r.log("terminating %d (%s)", pid, name)
		ended = append(ended, events.Signal{Signal: "TerminateJobObject", To: events.ToProcess, PID: pid, Comm: name, Why: signalWhy(r.phase)})
	}
	running := r.sys.commandRunning()
	if err := r.sys.terminate(); err != nil {
		r.log("cannot terminate the job: %v", err)
		return
	}
	for _, e := range ended {
		r.o.Events.Emit(e)
	}
	if running && r.killedBy == 0 {
		r.killedBy = sig
	}
}

// closeGroup runs after COMMAND ended: what is left of the job gets
// CTRL_BREAK_EVENT (those still in COMMAND's console process group), the
// job is terminated after the grace period, and closeGroup returns when
// the job is empty. A stop request meanwhile terminates at once.
func (r *winRunner) closeGroup(events <-chan uint32) {
	if n, _ := r.sys.active(); n == 0 {
		return
	}
	natural := r.phase == "" && !r.o.Hold
	r.phase = report.PhaseClose
	r.noteLeftovers()
	r.noteDaemons()
	c := &closer{r: r, events: events, name: natural}
	supervise.Close(r.o.Grace, c, nil)
	c.graceOver()
	r.noteGone("TerminateJobObject")
}

// closer is the close of the job as package supervise runs it: Ctrl-Break
// to what is left, once, then the job terminated.
type closer struct {
	r      *winRunner
	events <-chan uint32
	how    string // how the first request went: CTRL_BREAK_EVENT, or TerminateJobObject ("": none)
	name   bool   // keep the leftovers' names (Result.Leftovers): COMMAND ended by itself
	noted  bool   // what ended by it is noted
}

func (c *closer) Log(format string, a ...any) { c.r.log(format, a...) }

func (c *closer) Left() bool {
	n, err := c.r.sys.active()
	if err != nil {
		c.r.log("cannot count the processes of the job: %v", err)
	}
	return n != 0 || err != nil
}

// Ask delivers Ctrl-Break to COMMAND's process group, once: the console
// event reaches the group, not single processes.
func (c *closer) Ask() {
	if c.how != "" {
		return
	}
	pids := c.r.sys.pids()
	c.r.readPorts(pids)
	left := c.r.named(pids)
	if c.name {
		c.r.leftNames = c.r.imageNames(pids)
		for i, pid := range pids {
			c.r.leftNames[i] = c.r.leftPorts.named(pid, c.r.leftNames[i], pid)
		}
	}
	did := c.r.deliver(signals.Break)
	c.r.log("%d processes left in the job (%s): %s", len(left), strings.Join(left, ", "), did)
	c.how = "CTRL_BREAK_EVENT"
	if strings.HasSuffix(did, "terminated the job") {
		c.how = "TerminateJobObject"
	}
}

// Wait waits d, or until contain is told to stop (true).
func (c *closer) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev := <-c.events:
			if c.r.stopRequest(ev) {
				c.r.log("told to stop while closing: terminating the job")
				return true
			}
		case <-t.C:
			return false
		}
	}
}

func (c *closer) Kill() {
	c.graceOver()
	c.r.terminate(syscall.SIGKILL)
}

// graceOver notes what ended by the first request, once.
func (c *closer) graceOver() {
	if c.how != "" && !c.noted {
		c.noted = true
		c.r.noteGone(c.how)
	}
}

// noteDaemons reads, when COMMAND has ended, whether each process left in
// the job is marked as a daemon, once, for -v and the report: the job
// ends it all the same. Without --allow-daemons, contain run -d inside
// could not take it out of the job; with it, it did not ask to leave,
// or a job around contain's (nested jobs) refused it.
func (r *winRunner) noteDaemons() {
	r.rec.EachLeftover(func(l *account.Leftover) {
		env, _, err := proc.ReadEnvironment(l.Ref)
		if err != nil || !daemon.Marked(env) {
			return
		}
		l.Out.Daemon = true
		name := "?"
		if len(l.Out.Argv) > 0 {
			name = filepath.Base(l.Out.Argv[0])
		}
		if r.o.AllowDaemons {
			r.log("%d (%s) is marked as a daemon (%s=1) but did not leave the job (CREATE_BREAKAWAY_FROM_JOB was not asked for, or a job around contain's refused it): it ends with the group", l.Out.PID, name, tag.DaemonVar)
		} else {
			r.log("%d (%s) is marked as a daemon (%s=1): it ends with the group; contain run --allow-daemons would have spared it", l.Out.PID, name, tag.DaemonVar)
		}
	})
}

// detachAttr starts a detached COMMAND in its own console process group,
// without a console, and out of the job contain runs in, if any: where
// that job does not permit it, runDetached starts it without
// CREATE_BREAKAWAY_FROM_JOB.
func detachAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS | windows.CREATE_BREAKAWAY_FROM_JOB}
}

const detachedWhere = "in a new process group, without a console"

// runDetached starts COMMAND outside any group of contain's (detachAttr
// says where) and returns at once, its standard streams the null device
// (detach.go says why). Inside a job that forbids breakaway (a contain
// run without --allow-daemons, a CI runner's job), Windows refuses
// CREATE_BREAKAWAY_FROM_JOB (access denied): COMMAND is then started
// inside that job, and ends with it, and -v says so.
func runDetached(o Options) (Result, error) {
	log := o.logger()
	start := func(attr *syscall.SysProcAttr) (*exec.Cmd, error) {
		cmd := exec.Command(o.Args[0], o.Args[1:]...)
		if cmd.Err != nil {
			return nil, cmd.Err
		}
		cmd.Env, cmd.SysProcAttr = o.Env, attr
		return cmd, cmd.Start()
	}
	attr := detachAttr()
	cmd, err := start(attr)
	where := detachedWhere
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		attr.CreationFlags &^= windows.CREATE_BREAKAWAY_FROM_JOB
		if cmd, err = start(attr); err == nil {
			log("the job contain runs in does not let %s leave it (CREATE_BREAKAWAY_FROM_JOB was refused: inside contain run, --allow-daemons permits it): it stays in that job and ends with it", o.Args[0])
			where += ", inside the job contain runs in"
		}
	}
	if err != nil {
		return Result{}, &StartError{Name: o.Args[0], Err: err}
	}
	pid := cmd.Process.Pid
	log("started %s as PID %d %s, detached", o.Args[0], pid, where)
	cmd.Process.Release()
	return Result{Pid: pid, Exited: true}, nil
}

// SetConsoleCtrlHandler, which x/sys does not wrap.
var procSetConsoleCtrlHandler = kernel32.NewProc("SetConsoleCtrlHandler")

// The console's control events reach contain through a handler of its own,
// ahead of the Go runtime's (which would end contain on some of them).
var console struct {
	once     sync.Once
	events   chan uint32
	closed   chan struct{} // closed when Run is done
	closeOne sync.Once
}

// consoleEvents installs the handler, once, and returns its events.
func consoleEvents() <-chan uint32 {
	console.once.Do(func() {
		console.events = make(chan uint32, 16)
		console.closed = make(chan struct{})
		cb := syscall.NewCallback(func(ev uint32) uintptr {
			select {
			case console.events <- ev:
			default:
			}
			if ev == windows.CTRL_CLOSE_EVENT || ev == windows.CTRL_LOGOFF_EVENT || ev == windows.CTRL_SHUTDOWN_EVENT {
				// Windows ends the process when the handler returns:
				// hold it until the job is closed.
				select {
				case <-console.closed:
				case <-time.After(2*closeGrace + time.Second):
				}
			}
			return 1 // handled: contain lives on
		})
		procSetConsoleCtrlHandler.Call(cb, 1)
	})
	return console.events
}

// markClosed lets a held close, log-off or shutdown event go on.
func markClosed() {
	if console.closed != nil {
		console.closeOne.Do(func() { close(console.closed) })
	}
}

// underWine reports whether contain runs under Wine, whose ntdll exports
// wine_get_version.
func underWine() bool {
	wine.once.Do(func() { wine.is = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil })
	return wine.is
}

var wine struct {
	once sync.Once
	is   bool
}

func consoleEventName(ev uint32) string {
	switch ev {
	case windows.CTRL_C_EVENT:
		return "CTRL_C_EVENT"
	case windows.CTRL_BREAK_EVENT:
		return "CTRL_BREAK_EVENT"
	case windows.CTRL_CLOSE_EVENT:
		return "CTRL_CLOSE_EVENT"
	case windows.CTRL_LOGOFF_EVENT:
		return "CTRL_LOGOFF_EVENT"
	case windows.CTRL_SHUTDOWN_EVENT:
		return "CTRL_SHUTDOWN_EVENT"
	case ctrlStop:
		return "contain stop"
	}
	return fmt.Sprintf("console event %d", ev)
}
