package containment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
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
	// ErrExtraFiles: cmd.ExtraFiles cannot be passed to the command.
	ErrExtraFiles = errors.New("containment: cmd.ExtraFiles are not supported")
	// ErrStarted: the command was started already.
	ErrStarted = errors.New("containment: the command was started already")
)

// Options are what a Group asks of every command it starts: the options
// of contain run. The zero value is contain run's defaults.
type Options struct {
	// Originator is the TOOL part of the tag (1-64 of A-Z a-z 0-9 _ . -);
	// "" is CONTAIN.
	Originator string
	// Grace is the time between SIGTERM and SIGKILL when a group is
	// closed; 0 is contain run's 2 s.
	Grace time.Duration
	// Timeout sends Signal (SIGTERM when 0) to the command after this
	// long, as GNU timeout does; KillAfter sends SIGKILL that long after
	// it. 0: never.
	Timeout   time.Duration
	Signal    syscall.Signal
	KillAfter time.Duration
	// Limits hold for each command's whole tree.
	Limits Limits
	// AllowDaemons lets processes that carry RUNNING_PROCESS_IS_DAEMON=1
	// (contain run -d inside) leave the group and outlive it.
	AllowDaemons bool
	// Reports asks for each command's report (contain run --report), as
	// Close returns them. Without it nothing is measured that costs
	// anything.
	Reports bool
	// Log receives contain's own lines ("contain: ..."): its errors, and
	// with Verbose what contain run -v says. nil: none are kept.
	Log     io.Writer
	Verbose bool
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

// Group starts commands, each held in a kill-on-close group of its own,
// under one TOOL. Its methods may be called from several goroutines.
type Group struct {
	o    Options
	tool string
	args []string // contain run's options, as Start passes them
	exe  string

	mu      sync.Mutex
	closed  bool
	members []*heldCopy // those whose copy still runs
	reports []string    // every report asked for, in the order of Start
	dir     string      // the reports, with Options.Reports
	n       int
}

// heldCopy is one command started: the copy that holds it, the pipe
// whose closing tells the copy to close the group, and done, closed once
// the copy has ended.
type heldCopy struct {
	stop *os.File
	done chan struct{}
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
	g := &Group{o: o, tool: o.Originator}
	if g.tool == "" {
		g.tool = "CONTAIN"
	}
	if err := tag.ValidateTool(g.tool); err != nil {
		return nil, fmt.Errorf("containment: originator: %w", err)
	}
	args, err := runArgs(o, g.tool)
	if err != nil {
		return nil, err
	}
	g.args = args
	if g.exe, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("containment: cannot find this program's executable to run it again: %w", err)
	}
	if o.Reports {
		if g.dir, err = os.MkdirTemp("", "containment-"); err != nil {
			return nil, fmt.Errorf("containment: a directory for the reports: %w", err)
		}
	}
	return g, nil
}

// Originator is the TOOL of the group's tags.
func (g *Group) Originator() string { return g.tool }

// runArgs are contain run's options for o, each checked as contain run
// checks it.
func runArgs(o Options, tool string) ([]string, error) {
	args := []string{"--originator", tool}
	dur := func(name string, d time.Duration) error {
		if d < 0 {
			return fmt.Errorf("containment: %s %v is negative", name, d)
		}
		if d > 0 {
			args = append(args, "--"+name, strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+"s")
		}
		return nil
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"grace", o.Grace}, {"timeout", o.Timeout}, {"kill-after", o.KillAfter}} {
		if err := dur(d.name, d.d); err != nil {
			return nil, err
		}
	}
	if o.Signal != 0 {
		args = append(args, "--signal", strconv.Itoa(int(o.Signal)))
	}
	l := o.Limits
	if l.Memory > 0 {
		v := strconv.FormatUint(l.Memory, 10)
		if _, err := limit.ParseSize(v); err != nil {
			return nil, fmt.Errorf("containment: Limits.Memory: %w", err)
		}
		args = append(args, "--memory", v)
	}
	if l.Pids != 0 {
		v := strconv.Itoa(l.Pids)
		if _, err := limit.ParsePids(v); err != nil {
			return nil, fmt.Errorf("containment: Limits.Pids: %w", err)
		}
		args = append(args, "--pids", v)
	}
	if l.CPUTime != 0 {
		if err := limit.CheckCPUTime(l.CPUTime); err != nil {
			return nil, fmt.Errorf("containment: Limits.CPUTime: %w", err)
		}
		if err := dur("cpu-time", l.CPUTime); err != nil {
			return nil, err
		}
	}
	if l.CPUs != 0 {
		v := strconv.FormatFloat(l.CPUs, 'f', -1, 64)
		if _, err := limit.ParseCPUs(v, limit.NumCPU()); err != nil {
			return nil, fmt.Errorf("containment: Limits.CPUs: %w", err)
		}
		args = append(args, "--cpus", v)
	}
	if l.Strict {
		if l == (Limits{Strict: true}) {
			return nil, errors.New("containment: Limits.Strict: no limit asked for")
		}
		args = append(args, "--strict-limits")
	}
	if o.AllowDaemons {
		args = append(args, "--allow-daemons")
	}
	if o.Verbose {
		args = append(args, "--verbose")
	}
	return args, nil
}

// Start starts cmd in a kill-on-close group of its own, tagged TOOL:PID,
// and returns once the copy of the program that holds it has started.
// The command runs until it ends, until the copy is signalled, until
// Close, or until the program ends; then the copy closes its group, and
// cmd.Wait returns the command's exit status (see the package doc). A
// command that cannot be started gives 127 or 126, as contain run does.
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
	case len(cmd.ExtraFiles) > 0:
		return 0, ErrExtraFiles
	case cmd.Path == "":
		return 0, errors.New("containment: cmd.Path is empty")
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, ErrClosed
	}
	g.n++
	n := g.n
	g.mu.Unlock()

	name := cmd.Path
	// The copy's orders: contain run's arguments, from the Options alone.
	// They go to the copy on its stop pipe (encodeOrders); its argv shows
	// them to ps.
	orders := append([]string{"run"}, g.args...)
	m := &heldCopy{done: make(chan struct{})}
	report := ""
	if g.dir != "" && !detached {
		report = filepath.Join(g.dir, strconv.Itoa(n)+".json")
		orders = append(orders, "--report", report)
	}
	if detached {
		orders = append(orders, "--detach")
	}
	orders = append(orders, "--")
	orders = append(orders, cmd.Path)
	if len(cmd.Args) > 1 {
		orders = append(orders, cmd.Args[1:]...)
	}
	argv := append([]string{filepath.Base(g.exe), supervisorCommand}, orders...)

	stopR, stopW, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("containment: %w", err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		stopR.Close()
		stopW.Close()
		return 0, fmt.Errorf("containment: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	restore, pipes, err := passPipes(cmd, stopR, doneW)
	if err != nil {
		stopR.Close()
		stopW.Close()
		doneR.Close()
		doneW.Close()
		return 0, err
	}
	cmd.Env = append(env[:len(env):len(env)], pipesVar+"="+pipes)
	cmd.Path, cmd.Args = g.exe, argv
	// The orders, before anything else goes on the pipe (its end, from
	// Close): the copy reads them first. Where they fit in the pipe they
	// are there before the copy starts, which then never waits for them;
	// else they are written once it runs, so that Start cannot block.
	orderBytes := encodeOrders(orders)
	early := len(orderBytes) <= ordersEarly
	if early {
		nosigpipe.Pipe(stopW).Write(orderBytes)
	}
	err = cmd.Start()
	restore()
	stopR.Close()
	doneW.Close()
	if err != nil {
		stopW.Close()
		doneR.Close()
		return 0, fmt.Errorf("containment: cannot run this program again to hold the command: %w", err)
	}
	if !early {
		// A copy that has died already leaves the write an error, and
		// its end says the rest.
		nosigpipe.Pipe(stopW).Write(orderBytes)
	}
	m.stop = stopW
	held.Store(m, true)
	if !detached {
		g.mu.Lock()
		g.members = append(g.members, m)
		if report != "" {
			g.reports = append(g.reports, report)
		}
		if g.closed {
			// Close ran while this one started: it is closed at once.
			stopW.Close()
		}
		g.mu.Unlock()
	}

	lines := make(chan string, 1)
	go func() {
		defer g.forget(m)
		defer doneR.Close()
		sc := bufio.NewScanner(doneR)
		for sc.Scan() {
			kind, text, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case "pid":
				lines <- text
			case "log":
				if g.o.Log != nil {
					fmt.Fprintln(g.o.Log, text)
				}
			}
		}
	}()
	if !detached {
		return 0, nil
	}
	// contain run -d prints the PID and ends.
	var pid int
	select {
	case v := <-lines:
		pid, _ = strconv.Atoi(v)
	case <-m.done:
	}
	<-m.done
	werr := cmd.Wait()
	if pid <= 0 {
		if werr == nil {
			werr = errors.New("it said no PID")
		}
		return 0, fmt.Errorf("containment: cannot start %s detached: %w", name, werr)
	}
	return pid, nil
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
	close(m.done)
}

// Close closes every group still open: each copy's command gets SIGTERM
// and what is left of its tree SIGKILL after the grace period, as when
// contain run is told to stop. It returns once every copy has ended, so
// once nothing of the groups is left, or when ctx is done (the closing
// goes on). With Options.Reports, the reports of every command the
// Group started, in the order they were started (one that could not be
// written, the copy having been killed, is left out).
func (g *Group) Close(ctx context.Context) ([]*report.Report, error) {
	g.mu.Lock()
	g.closed = true
	members := slices.Clone(g.members)
	reports := g.reports
	g.mu.Unlock()
	for _, m := range members {
		m.stop.Close()
	}
	for _, m := range members {
		select {
		case <-m.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if g.dir == "" {
		return nil, nil
	}
	defer os.RemoveAll(g.dir)
	var out []*report.Report
	for _, path := range reports {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r report.Report
		if err := json.Unmarshal(b, &r); err != nil {
			return out, fmt.Errorf("containment: report %s: %w", path, err)
		}
		out = append(out, &r)
	}
	return out, nil
}
