package containment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// Errors a Group returns, for errors.Is.
var (
	// ErrUnsupported: this OS has no containment written yet (contain
	// runs on Linux, macOS and Windows).
	ErrUnsupported = proc.ErrUnsupported
	// ErrClosed: the Group was closed; it starts nothing more.
	ErrClosed = errors.New("containment: the group is closed")
	// ErrExtraFiles: cmd.ExtraFiles cannot be passed to the command
	// (Windows; Linux and macOS pass them on).
	ErrExtraFiles = errors.New("containment: cmd.ExtraFiles are not supported on this OS")
	// ErrUnknownCommand: the command was not started by this Group.
	ErrUnknownCommand = errors.New("containment: the command was not started by this group")
	// ErrStarted: the command was started already.
	ErrStarted = errors.New("containment: the command was started already")
)

// Options are what a Group asks of every command it starts: the options
// of contain run. The zero value is contain run's defaults.
type Options struct {
	// Originator is the TOOL part of the tag (1-64 of A-Z a-z 0-9 _ . -);
	// "" is CONTAIN.
	Originator string
	// Grace is the time between SIGTERM and SIGKILL when the session is
	// closed, and when Wait ends what a command left in its process
	// group; 0 is contain run's 2 s.
	Grace time.Duration
	// Timeout sends Signal (SIGTERM when 0) to the command after this
	// long, as GNU timeout does; KillAfter sends SIGKILL that long after
	// it. 0: never.
	Timeout   time.Duration
	Signal    syscall.Signal
	KillAfter time.Duration
	// Limits hold for the whole session: every command together, and
	// what they started (where each command has a copy of its own, see the package doc: each command's tree). A limit
	// exceeded ends the session, and the Group with it.
	Limits Limits
	// AllowDaemons lets processes that carry RUNNING_PROCESS_IS_DAEMON=1
	// (contain run -d inside) leave the group and outlive it.
	AllowDaemons bool
	// Reports asks for the session's report (contain run --report), as
	// Close returns it (where each command has a copy of its own, each command's). Without it nothing
	// is measured that costs anything.
	Reports bool
	// Log receives contain's own lines ("contain: ..."): its errors, and
	// with Verbose what contain run -v says. nil: none are kept.
	Log     io.Writer
	Verbose bool
	// Events receives what happens in the session as it happens, as
	// contain run --events writes it: one JSON object a line (schema
	// version 1, docs/REPORT.md), each with its session's tag. In a
	// session the Group holds, the lines are the session's (started,
	// daemon, limit, signal, leftover, end: what its close ended);
	// joined is not said (the program starts each command), nor a
	// command's timeout, which the program sends itself. Where each
	// command has a copy of its own, each copy's lines, each with its
	// own tag. Lines are written from a goroutine of the Group's, never
	// holding a command up: a writer that blocks has the lines that do
	// not fit dropped, and a "dropped" line says how many. Close (and
	// Wait, for a command with a copy of its own) returns once the lines
	// of what it waited for are written. nil: none are made.
	Events io.Writer
	// Terminal hands the program's controlling terminal to each command,
	// as contain run does (the command reads it, and gets Ctrl-C and
	// Ctrl-Z), and puts back the terminal's settings as they were at its
	// start when its timeout or a signal ended it (Wait). Without it a
	// command runs in a process group of its own outside the terminal's
	// foreground, so Ctrl-C stays the program's (Unix; nothing on
	// Windows).
	Terminal bool
}

// Limits are the whole-tree limits (contain run --memory, --pids,
// --cpu-time, --cpus, --strict-limits); zero fields ask for none.
type Limits struct {
	Memory  uint64 // bytes
	Pids    int
	CPUTime time.Duration
	CPUs    float64
	// Strict refuses to run where a limit cannot be held by the kernel.
	Strict bool
}

// Group starts commands in one kill-on-close group, a session of contain
// tagged TOOL:PID (Tag), held by a copy of the program (or, where no
// cgroup holds it, each command in a group of its own: see the package
// doc). Its methods may be called from several goroutines.
type Group struct {
	o    Options
	spec run.Spec // every command's, but the command itself
	exe  string

	mu      sync.Mutex
	closed  bool
	members []*heldCopy             // those whose copy still runs
	byCmd   map[*exec.Cmd]*heldCopy // every command a copy of its own holds, until Wait
	reports []*heldCopy             // with Options.Reports, in the order of Start

	// The holder (Linux, Windows): the one copy that holds the Group's
	// session, started with the first command (holding serializes that);
	// cmds are the commands started in it, until Wait.
	holding  sync.Mutex
	starting sync.RWMutex // held by each start, taken by Close
	hold     *heldCopy
	noHold   atomic.Bool // the holder found nothing to hold the session in: a copy per command
	cmds     map[*exec.Cmd]*command
	held     heldAttrs // what each command's start adds (held_*.go)
	// events writes the copies' lines to Options.Events (nil: none).
	events *events.Writer
}

// heldCopy is one command started: the copy that holds it, the pipe
// whose closing tells the copy to close the group, and what the copy
// said. started is closed once COMMAND's PID is known or the copy has
// ended; done once the copy's pipe has ended (pid and outcome are set
// before).
type heldCopy struct {
	stop    *os.File
	started chan struct{}
	done    chan struct{}
	// said is closed once the copy has sent its Outcome (its work is
	// over; it is exiting), or its pipe has ended.
	said     chan struct{}
	saidOnce sync.Once
	pid      int
	outcome  *run.Outcome
	// A holder's: where its commands start (run.Spec.Held: a cgroup,
	// or a job's handle in the holder), said with frameHeld (held: it
	// holds its session).
	in   string
	held bool
}

// held keeps every copy's stop pipe reachable until Close, whatever the
// program does with its Group: a pipe the garbage collector closed would
// close a group.
var held sync.Map

// NewGroup checks o and makes a Group.
func NewGroup(o Options) (*Group, error) {
	if !supported {
		return nil, fmt.Errorf("containment on this OS: %w", ErrUnsupported)
	}
	g := &Group{o: o, byCmd: map[*exec.Cmd]*heldCopy{}, cmds: map[*exec.Cmd]*command{}}
	var err error
	if g.spec, err = specOf(o); err != nil {
		return nil, err
	}
	g.events = events.New(o.Events, "")
	if g.exe, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("containment: cannot find this program's executable to run it again: %w", err)
	}
	return g, nil
}

// Originator is the TOOL of the group's tags.
func (g *Group) Originator() string { return g.spec.ToolOf() }

// Tag is the tag of the Group's session, TOOL:PID (the PID of the copy
// of the program that holds it), as contain ps, stop, wait and reap name
// it; "" before the first command starts, and where each
// command is a session of its own (tagged with its copy's PID).
func (g *Group) Tag() string {
	g.holding.Lock()
	defer g.holding.Unlock()
	if g.hold == nil {
		return ""
	}
	return g.held.tag
}

// specOf is the run.Spec that o asks of every command, checked as
// contain run checks its flags (run.Spec.Check), its faults named by the
// Options' fields.
func specOf(o Options) (run.Spec, error) {
	s := run.Spec{Tool: o.Originator, Grace: o.Grace, Timeout: o.Timeout, Signal: o.Signal, KillAfter: o.KillAfter,
		AllowDaemons: o.AllowDaemons, Verbose: o.Verbose, Keep: o.Reports, NoTerminal: !o.Terminal, SendEvents: o.Events != nil,
		Limits: limit.Set{Memory: o.Limits.Memory, Pids: o.Limits.Pids, CPUTime: o.Limits.CPUTime, CPUs: o.Limits.CPUs, Strict: o.Limits.Strict}}
	if s.Grace == 0 {
		s.Grace = 2 * time.Second
	}
	if s.Signal == 0 {
		s.Signal = syscall.SIGTERM
	}
	if o.Grace < 0 {
		s.Grace = o.Grace // refused by Check
	}
	if err := s.Check(); err != nil {
		var se *run.SpecError
		if errors.As(err, &se) && fieldOf[se.Option] != "" {
			return s, fmt.Errorf("containment: %s: %w", fieldOf[se.Option], se.Err)
		}
		return s, fmt.Errorf("containment: %w", err)
	}
	return s, nil
}

// fieldOf names the Options field of each of contain run's options.
var fieldOf = map[string]string{
	"originator": "Originator", "timeout": "Timeout", "kill-after": "KillAfter", "grace": "Grace",
	"signal": "Signal", "memory": "Limits.Memory", "pids": "Limits.Pids", "cpu-time": "Limits.CPUTime",
	"cpus": "Limits.CPUs", "strict-limits": "Limits.Strict",
}

// Start starts cmd in the Group's session, tagged with its tag, as
// cmd.Start does (the first Start starts the copy that holds the session
// too). The command runs until it ends, until Close, or until the
// program ends; Group.Wait says how it ended. Its errors are cmd.Start's,
// or ErrClosed. cmd.Env and cmd.SysProcAttr are put back as they were
// when Start returns; cmd.Process is the command.
//
// Where no cgroup holds a session (see the package doc), the command is
// held by a copy of the program of its own,
// which cmd.Process is; a command that cannot be started gives 127 or
// 126 in Wait, as contain run does.
func (g *Group) Start(cmd *exec.Cmd) error {
	_, err := g.start(cmd, false)
	return err
}

// StartDetached starts cmd as contain run -d does: in a session of its
// own, tagged TOOL:PID and marked RUNNING_PROCESS_IS_DAEMON=1, outside
// any group, so that it outlives the group and the program, and contain
// reap leaves it alone. It returns the command's PID once it has started;
// cmd has been waited for (cmd.Process is the copy that started it).
func (g *Group) StartDetached(cmd *exec.Cmd) (pid int, err error) {
	return g.start(cmd, true)
}

func (g *Group) start(cmd *exec.Cmd, detached bool) (int, error) {
	switch {
	case cmd.Process != nil:
		return 0, ErrStarted
	case cmd.Err != nil:
		return 0, cmd.Err
	case len(cmd.ExtraFiles) > 0 && !extraFiles:
		return 0, ErrExtraFiles
	case cmd.Path == "":
		return 0, errors.New("containment: cmd.Path is empty")
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	if !detached && g.holds() {
		if held, err := g.startHeld(cmd); held {
			return 0, err
		}
	}

	s := g.spec
	s.Args = append([]string{cmd.Path}, cmd.Args[min(1, len(cmd.Args)):]...)
	s.Env = cmd.Env
	if s.Env == nil {
		s.Env = os.Environ()
	}
	s.Detach = detached
	if detached {
		s.Keep = false
	}
	path := cmd.Path
	m, err := g.startCopy(cmd, s, !detached)
	if err != nil {
		return 0, err
	}
	if !detached {
		<-m.started
		return 0, nil
	}
	// contain run -d's Outcome has the PID; it ends at once.
	<-m.done
	werr := cmd.Wait()
	if m.outcome == nil || m.outcome.Pid <= 0 {
		switch {
		case m.outcome != nil && m.outcome.Error != "":
			werr = errors.New(m.outcome.Error)
		case werr == nil:
			werr = errors.New("it said no PID")
		}
		return 0, fmt.Errorf("containment: cannot start %s detached: %w", path, werr)
	}
	return m.outcome.Pid, nil
}

// startCopy starts cmd as a copy of this program that runs s, and
// returns once it runs: cmd.Path, cmd.Args and cmd.Env are the copy's
// while it starts, cmd's own again after. member: the copy belongs to
// the Group (Close closes it, Wait finds it, its report is kept).
func (g *Group) startCopy(cmd *exec.Cmd, s run.Spec, member bool) (*heldCopy, error) {
	spec := encodeSpec(s)
	stopR, stopW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("containment: %w", err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		stopR.Close()
		stopW.Close()
		return nil, fmt.Errorf("containment: %w", err)
	}
	restore, pipes, err := passPipes(cmd, stopR, doneW)
	if err != nil {
		stopR.Close()
		stopW.Close()
		doneR.Close()
		doneW.Close()
		return nil, err
	}
	path, args, env := cmd.Path, cmd.Args, cmd.Env
	cmd.Path = g.exe
	// ps shows the copy with its tool and command (a holder: --hold).
	if s.Hold {
		cmd.Args = []string{filepath.Base(g.exe), supervisorCommand, s.ToolOf(), "--hold"}
	} else {
		cmd.Args = append([]string{filepath.Base(g.exe), supervisorCommand, s.ToolOf(), "--"}, s.Args...)
	}
	cmd.Env = copyEnv(pipes)
	// The Spec goes before anything else on the pipe (its end, from
	// Close). Where it fits in the pipe it is there before the copy
	// starts, which then never waits for it; else it is written once it
	// runs, so that Start cannot block.
	early := len(spec) <= specEarly
	if early {
		nosigpipe.Pipe(stopW).Write(spec)
	}
	err = cmd.Start()
	restore()
	cmd.Path, cmd.Args, cmd.Env = path, args, env
	stopR.Close()
	doneW.Close()
	if err != nil {
		stopW.Close()
		doneR.Close()
		return nil, fmt.Errorf("containment: cannot run this program again to hold the command: %w", err)
	}
	if !early {
		// A copy that has died already leaves the write an error, and
		// its end says the rest.
		nosigpipe.Pipe(stopW).Write(spec)
	}
	m := &heldCopy{stop: stopW, started: make(chan struct{}), done: make(chan struct{}), said: make(chan struct{})}
	held.Store(m, true)
	if member {
		g.mu.Lock()
		g.members = append(g.members, m)
		if s.Args != nil {
			g.byCmd[cmd] = m
		}
		if g.o.Reports {
			g.reports = append(g.reports, m)
		}
		if g.closed {
			// Close ran while this one started: it is closed at once.
			stopW.Close()
		}
		g.mu.Unlock()
	}
	go g.listen(m, doneR)
	return m, nil
}

// listen reads what m's copy says until its pipe ends.
func (g *Group) listen(m *heldCopy, r *os.File) {
	defer g.forget(m)
	defer r.Close()
	started := func() {
		select {
		case <-m.started:
		default:
			close(m.started)
		}
	}
	defer started()
	br := bufio.NewReader(r)
	for {
		kind, b, err := readFrame(br)
		if err != nil {
			return
		}
		switch kind {
		case frameStarted:
			m.pid, _ = strconv.Atoi(string(b))
			started()
		case frameHeld:
			m.in, m.held = string(b), true
			started()
		case frameLog:
			if g.o.Log != nil {
				g.o.Log.Write(append(b, '\n'))
			}
		case frameEvent:
			g.events.Line(b)
		case frameOutcome:
			if o, err := unmarshalOutcome(b); err == nil {
				m.outcome = &o
				if o.Error != "" && g.o.Log != nil {
					text.Fprintf(g.o.Log, "contain: %s\n", o.Error)
				}
			}
			m.saidOnce.Do(func() { close(m.said) })
		}
	}
}

// forget lets go of m once its copy has ended.
func (g *Group) forget(m *heldCopy) {
	g.mu.Lock()
	if i := slices.Index(g.members, m); i >= 0 {
		g.members = slices.Delete(g.members, i, i+1)
	}
	g.mu.Unlock()
	m.stop.Close()
	held.Delete(m)
	m.saidOnce.Do(func() { close(m.said) })
	close(m.done)
}

// Pid is the PID of cmd's command, started by g.Start (cmd.Process.Pid,
// but where cmd.Process is the copy that holds it); 0 when it
// did not start.
func (g *Group) Pid(cmd *exec.Cmd) int {
	g.mu.Lock()
	m, c := g.byCmd[cmd], g.cmds[cmd]
	g.mu.Unlock()
	if c != nil {
		return c.pid
	}
	if m == nil {
		return 0
	}
	<-m.started
	return m.pid
}

// Wait waits for cmd, started by g.Start, in place of cmd.Wait (which it
// calls), and says how its command ended: nil when it exited 0, else an
// *ExitError (its code or signal, a timeout; HolderEnded when the copy
// that held the session was killed). Before it returns it ends what the
// command left in its process group: SIGTERM, and SIGKILL after the
// grace period (see the package doc); what left it is the session's,
// ended by Close. Where the command has a copy of its own, it returns
// once nothing of the command's
// own group is left.
func (g *Group) Wait(cmd *exec.Cmd) error {
	g.mu.Lock()
	m, c := g.byCmd[cmd], g.cmds[cmd]
	delete(g.byCmd, cmd)
	delete(g.cmds, cmd)
	g.mu.Unlock()
	if c != nil {
		return g.waitHeld(cmd, c)
	}
	if m == nil {
		return ErrUnknownCommand
	}
	werr := cmd.Wait()
	<-m.done
	g.events.Flush() // what the copy said is written
	if o := m.outcome; o != nil {
		if o.Status == 0 && o.Error == "" {
			return nil
		}
		e := &ExitError{Pid: o.Pid, Status: o.Status, Exited: o.Exited, Code: o.Code, Signal: o.KilledBy,
			TimedOut: o.TimedOut, Limit: o.Limit, ProcessState: cmd.ProcessState}
		if o.Error != "" {
			e.Err = errors.New(o.Error)
		}
		return e
	}
	// The copy ended without a word: killed. Its crash guard closes the
	// group; the session's processes are waited for, a grace period and
	// some more at most.
	e := &ExitError{Pid: m.pid, Status: -1, HolderEnded: true, ProcessState: cmd.ProcessState, Err: werr}
	if cmd.Process != nil && m.pid > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), g.spec.Grace+holderSlack)
		defer cancel()
		Wait(ctx, []string{tag.Format(g.spec.ToolOf(), cmd.Process.Pid)}, nil, false)
	}
	return e
}

// holderSlack is how long past the grace period Wait waits for a killed
// copy's crash guard to end what was left.
const holderSlack = 5 * time.Second

// ExitError is how a command a Group started ended, when it did not exit
// 0 (Group.Wait).
type ExitError struct {
	// Pid is the command's (0: it never ran).
	Pid int
	// Status is what contain run would have exited with: the command's
	// code, 128+N for signal N, 124 on a timeout, 137 when killed after
	// the timeout or by a limit; where the command has a copy of its own,
	// 125-127 when it could not
	// start, and -1 when the copy that held it ended first (HolderEnded).
	Status int
	// Exited: the command exited with Code. Signal: the signal that ended
	// it, whoever sent it (0: none).
	Exited bool
	Code   int
	Signal syscall.Signal
	// TimedOut: the timeout, or the CPU time limit, fired. Limit names
	// the limit that ended it ("memory", "pids", "cpu-time"; "": none),
	// where the session had ended by a limit by the time Wait returned.
	TimedOut bool
	Limit    string
	// Err: where the command has a copy of its own, why it could not
	// start, or, with
	// HolderEnded, what cmd.Wait said of the copy; elsewhere an error of
	// cmd.Wait's other than the command's status (copying its output).
	Err error
	// HolderEnded: the copy of the program that held the session was
	// killed, and its crash guard closed the session (the command's
	// signal says how it ended). Where the command has a copy of its
	// own: the copy that held the
	// command ended before it could say how the command ended
	// (cmd.Process.Kill, exec.CommandContext's cancel): Wait returned
	// once no process of its session was left, or a grace period and 5 s
	// after.
	HolderEnded bool
	// ProcessState is cmd.ProcessState: the command's, or its own copy's
	// where it has one.
	ProcessState *os.ProcessState
}

func (e *ExitError) Error() string {
	switch {
	case e.HolderEnded && e.Err == nil:
		return fmt.Sprintf("containment: the copy that held the session was killed, and its crash guard closed it (status %d)", e.Status)
	case e.HolderEnded:
		return fmt.Sprintf("containment: the copy that held the command ended first (%v): its group was closed by the crash guard", e.Err)
	case e.Err != nil:
		return fmt.Sprintf("containment: %v (status %d)", e.Err, e.Status)
	case e.Limit != "":
		return fmt.Sprintf("containment: the command was ended by the %s limit (status %d)", e.Limit, e.Status)
	case e.TimedOut:
		return fmt.Sprintf("containment: the command timed out (status %d)", e.Status)
	case e.Signal != 0:
		return fmt.Sprintf("containment: the command was killed by %s (status %d)", signals.Name(e.Signal), e.Status)
	}
	return fmt.Sprintf("containment: the command exited with %d", e.Code)
}

func (e *ExitError) Unwrap() error { return e.Err }

// copyEnv is the copy's own environment: the few of the program's
// variables it needs (where it may write, whose session it is in), and
// where its pipes are. No job's variable, no GODEBUG, no CONTAIN_*: the
// command's environment is in the Spec.
func copyEnv(pipes string) []string {
	env := []string{pipesVar + "=" + pipes}
	for _, k := range copyVars {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Close closes the session: every process of it gets SIGTERM, and what
// is left SIGKILL after the grace period, as contain run's leftovers do
// (the report's told_to_stop says the program closed it); the Group
// starts nothing more. It returns once the holder has ended, so once
// nothing of the session is left, or when ctx is done (the closing goes
// on). With Options.Reports, the session's report (where each command has a copy of its own, the
// reports of every command, in the order they were started; one whose
// copy was killed, which could not say it, is left out). The commands
// are still to be waited for (Wait, or cmd.Wait).
func (g *Group) Close(ctx context.Context) ([]*report.Report, error) {
	// A start under way ends first: what it starts is then in the
	// session the holder closes.
	g.starting.Lock()
	g.mu.Lock()
	g.closed = true
	members := slices.Clone(g.members)
	reports := g.reports
	g.mu.Unlock()
	g.starting.Unlock()
	for _, m := range members {
		m.stop.Close()
	}
	for _, m := range members {
		select {
		case <-m.said:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	g.holding.Lock()
	if g.hold != nil {
		g.held.close()
	}
	g.holding.Unlock()
	var out []*report.Report
	for _, m := range reports {
		<-m.said
		if m.outcome != nil && m.outcome.Report != nil {
			out = append(out, m.outcome.Report)
		}
	}
	// Every copy has said all it had to say: its lines are written, and
	// no copy starts any more.
	g.events.Close()
	return out, nil
}
