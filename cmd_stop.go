package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

var stopCommand = &cli.Command{
	Name:      "stop",
	Usage:     "ask live sessions to close their groups, and wait until they have",
	ArgsUsage: "[TOOL:PID...]",
	Description: `Asks the originator of each live session named (TOOL:PID), or of every live
session of the tools given with -o, to close its group, then waits until
the session has no live process and the originator has ended. A contain run
asked so ends its group as on SIGTERM: SIGTERM to every process, SIGKILL
after its grace period.

The originator is asked only through a handle that pins it (a pidfd on
Linux, a process handle on Windows; on macOS it is read again immediately
before kill(2)), after checking through it that it is still the session's
originator (it started no later than the session's earliest process, the
rule that makes a session alive) and the user's own, unless run as root.
An orphaned session is left to contain reap --session TOOL:PID.

A tag is a claim any process can make, so the originator is asked only
when it is plausibly the session's: the same user as the session's
processes (another user's process that carries the value is left out,
neither waited for nor killed), started no later than each, never PID 1,
this contain or one of its ancestors, and, for a CONTAIN session, a contain run (its executable
this contain's, or one named contain, run as contain run or timeout).
Otherwise one line on stderr says why it was not asked, and --kill kills
nothing of that session; of a session asked, --kill kills only what its
originator's user runs, started after it.

Processes marked RUNNING_PROCESS_IS_DAEMON=1 are not waited for (unless
--include-daemons), nor are this contain and its ancestors: a stop run from
inside the session it stops does not wait for itself.

On Windows, which has no signal that one process can send another, TERM,
INT and BREAK set the event that contain run waits on (a session of
another tool has none and is refused), and KILL terminates the originator
(TerminateProcess, through its handle).

An originator that ignores the signal (its disposition SIG_IGN: a
background contain run started by a shell without job control ignores
SIGINT, as GNU timeout does) would never act on it: stop says so at once
on stderr (contain: stop: session CONTAIN:1234: PID 1234 ignores SIGINT;
not waiting for it (try -s TERM)) and neither asks nor waits for that
session; with --kill it asks it all the same, and kills it after
--timeout. Linux reads SigIgn in /proc/PID/status, macOS the kernel's
p_sigignore; Windows has no signal dispositions.

Nothing matched, as pkill says it: when no process carries a session named,
or no session of the -o tools is found, stop says so on stderr, one line
each, and exits 1. The count of processes whose environment cannot be read
(other users', unless root) is said then only, where they could hide what
was asked for. What is said on stderr is not repeated in the report on
stdout.

Exit status: 0 when every session asked has ended (also when one named had
only daemons left, which is said on stderr), 124 when --timeout passed
first (without --kill), 1 when nothing matched, a session could not be
asked (another user's, an orphaned one named, one named whose originator is
not plausibly its own, one whose originator ignores the signal, or no
session asked at all though one was found) or --kill left something, 2 on
bad usage.`,
	Flags: []cli.Flag{
		newListFlag(&cli.StringSliceFlag{Name: "originator", Aliases: []string{"o"}, Usage: "every live session of `TOOL`, exactly (repeat the option for more)"}),
		&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "ask the originator with `SIG` (Windows: TERM, INT, BREAK or KILL)"},
		&cli.StringFlag{Name: "timeout", Aliases: []string{"t"}, Value: "0", Usage: "wait at most `DURATION`, then exit 124, or --kill (0: no limit)"},
		&cli.BoolFlag{Name: "kill", Usage: "after --timeout, kill the originator and what is left of the session, as reap does"},
		&cli.BoolFlag{Name: "include-daemons", Usage: "also wait for (and --kill) processes marked RUNNING_PROCESS_IS_DAEMON=1"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "the report: `table` or json"},
	},
	OnUsageError:    usageError,
	Action:          doStop,
	HideHelpCommand: true,
}

// stopRequest is stop's parsed options.
type stopRequest struct {
	set            watch.Set
	sig            syscall.Signal
	timeout        time.Duration
	kill           bool
	includeDaemons bool
	format         string
}

func parseStop(c *cli.Context) (stopRequest, error) {
	var rq stopRequest
	var err error
	if rq.set, err = parseSessions(c); err != nil {
		return rq, err
	}
	if rq.sig, err = signals.Parse(c.String("signal")); err != nil {
		return rq, badUsage("--signal: %v", err)
	}
	if rq.sig == 0 {
		return rq, badUsage("--signal: 0 sends nothing (contain wait waits without asking)")
	}
	if rq.timeout, err = parseTimeout(c); err != nil {
		return rq, err
	}
	if rq.kill = c.Bool("kill"); rq.kill && rq.timeout == 0 {
		return rq, badUsage("--kill: needs --timeout, the time to wait before killing")
	}
	if rq.format, err = outputFormat(c); err != nil {
		return rq, err
	}
	rq.includeDaemons = c.Bool("include-daemons")
	return rq, nil
}

// outcome is what stop did with a session.
type outcome int

const (
	nothingToStop outcome = iota // no process of it but daemons (or this contain)
	asked                        // its originator was asked, through pin
	orphaned                     // its originator is gone: reap's business
	refused                      // its originator could not be asked: detail says why
	notAsked                     // its originator is not plausibly the session's: detail says why
	ignoring                     // its originator ignores the signal: said at once, not asked
)

// stopped is one session stop found, and what became of it.
type stopped struct {
	value, tool string
	pid         int
	state       session.State
	named       bool
	absent      bool // named, and no process carries it: nothing matched
	outcome     outcome
	detail      string
	pin         *proc.OriginatorPin // asked: held to the end
	claimed     session.Claimed     // asked: what was checked of the originator
}

// stopRun is one contain stop.
type stopRun struct {
	rq       stopRequest
	w        *watch.Watch
	sessions []*stopped
	reaped   map[proc.ID]reap.Outcome // what --kill did
	timedOut bool                     // --timeout passed before the sessions ended
	killed   bool                     // then --kill was used
	stderr   io.Writer
}

func doStop(c *cli.Context) error {
	rq, err := parseStop(c)
	if err != nil {
		return err
	}
	st := &stopRun{rq: rq, w: watch.New(rq.set, rq.includeDaemons, c.App.ErrWriter), reaped: map[proc.ID]reap.Outcome{}, stderr: c.App.ErrWriter}
	defer st.close()
	began := time.Now()
	found, err := st.w.Scan()
	if err != nil {
		return err
	}
	var vanished []*stopped
	for i := range found {
		if s, gone := st.ask(&found[i]); gone {
			vanished = append(vanished, s)
		}
	}
	if err := st.recheck(vanished); err != nil {
		return err
	}
	for _, v := range rq.set.Values {
		if st.find(v) == nil {
			tool, pid, _ := tag.Parse(v)
			st.sessions = append(st.sessions, &stopped{value: v, tool: tool, pid: pid, named: true, absent: true, detail: "no process carries it"})
		}
	}

	done := true
	if values := st.values(asked); len(values) > 0 {
		st.w.Narrow(values)
		if done, err = st.w.Wait(context.Background(), deadlineAfter(rq.timeout), st.pending); err != nil {
			return err
		}
		st.timedOut = !done
		if !done && rq.kill {
			st.killed = true
			st.killRest()
			if done, err = st.w.Wait(context.Background(), time.Now().Add(2*time.Second), st.pending); err != nil {
				return err
			}
		}
	}
	rep := st.report(time.Since(began))
	if err := rep.write(c.App.Writer, rq.format); err != nil {
		return err
	}
	return st.exit(done)
}

// ask decides what to do with s and, when it is live, asks its
// originator. gone: the originator was found ended (or its PID reused) as
// it was pinned; recheck looks at the session again.
func (st *stopRun) ask(s *session.Session) (x *stopped, gone bool) {
	x = &stopped{value: s.Value, tool: s.Tool, pid: s.PID, state: s.State, named: slices.Contains(st.rq.set.Values, s.Value)}
	st.sessions = append(st.sessions, x)
	if why := session.NeverOriginator(s.PID, st.w.Me); why != "" {
		x.outcome, x.detail = notAsked, why
		return x, false
	}
	switch {
	case !slices.ContainsFunc(s.Processes, st.stoppable):
		x.outcome = nothingToStop
		if n := s.Daemons(); n > 0 && !st.rq.includeDaemons {
			x.detail = plural(n, "daemon", "daemons") + " left running (--include-daemons stops them)"
		}
		return x, false
	case s.State != session.Alive:
		x.outcome, x.detail = orphaned, s.Reason
		return x, false
	}
	pin, err := proc.PinOriginator(s.PID, s.NotAfter, st.w.Me)
	if err == nil {
		// A tag is only a claim: ask the process it names only when it
		// is plausibly the session's originator (session.Implausible).
		x.claimed = pin.Claimed()
		if why := session.Implausible(s.Tool, x.claimed, s.Processes, st.w.Me); why != "" {
			pin.Close()
			x.outcome, x.detail = notAsked, why
			return x, false
		}
		if st.ignored(x, pin) && !st.rq.kill {
			pin.Close()
			x.outcome = ignoring
			return x, false
		}
		if err = pin.Ask(st.rq.sig); err != nil {
			pin.Close()
		}
	}
	switch {
	case err == nil:
		x.outcome, x.pin = asked, pin
	case errors.Is(err, proc.ErrGone), errors.Is(err, proc.ErrIdentity):
		x.outcome = orphaned
		return x, true
	default:
		x.outcome, x.detail = refused, fmt.Sprintf("cannot ask PID %d: %v", s.PID, err)
	}
	return x, false
}

// ignored reports whether the originator of x, pinned, ignores the
// signal stop is to send (its disposition is SIG_IGN), and then says so
// on stderr at once: without --kill, stop does not wait for a session
// that cannot end by it; with --kill, it is killed after --timeout. The
// dispositions are read by PID, then the pin is checked to be running
// still: the PID named the pinned process all along.
func (st *stopRun) ignored(x *stopped, pin *proc.OriginatorPin) bool {
	ign, err := proc.IgnoresSignal(x.pid, st.rq.sig)
	if err != nil || !ign || pin.Exited() {
		return false
	}
	name := signals.Name(st.rq.sig)
	x.detail = fmt.Sprintf("PID %d ignores %s", x.pid, name)
	if st.rq.kill {
		fmt.Fprintf(st.stderr, "contain: stop: session %s: %s; --kill ends it after %v\n", shorten(printable(x.value)), x.detail, st.rq.timeout)
		return true
	}
	try := "-t DURATION --kill ends it"
	if term, err := proc.IgnoresSignal(x.pid, syscall.SIGTERM); st.rq.sig != syscall.SIGTERM && err == nil && !term {
		try = "try -s TERM"
	}
	fmt.Fprintf(st.stderr, "contain: stop: session %s: %s; not waiting for it (%s)\n", shorten(printable(x.value)), x.detail, try)
	return true
}

// stoppable: p makes its session worth asking to stop. A daemon does not
// (unless --include-daemons), nor does this contain; an ancestor of this
// contain does, though it is not waited for: a stop run from inside a
// session stops it (when its originator is not an ancestor too).
func (st *stopRun) stoppable(p session.Process) bool {
	return p.PID != st.w.Me.PID && (!p.Daemon || st.rq.includeDaemons)
}

// recheck lists again the sessions whose originator ended as it was to be
// asked: one that has nothing left is done (a contain run that ended by
// itself), one with processes left is orphaned.
func (st *stopRun) recheck(vanished []*stopped) error {
	if len(vanished) == 0 {
		return nil
	}
	var values []string
	for _, s := range vanished {
		values = append(values, s.value)
	}
	st.w.Set = watch.Set{Values: values}
	if _, err := st.w.Scan(); err != nil {
		return err
	}
	for _, s := range vanished {
		s.detail = fmt.Sprintf("PID %d ended before it could be asked", s.pid)
		if st.w.Holding(s.value) == 0 {
			s.outcome = nothingToStop
		}
	}
	return nil
}

// reapHint is the contain reap that ends the orphaned session value, and
// its daemons too when stop was to count them.
func (st *stopRun) reapHint(value string) string {
	if st.rq.includeDaemons {
		return "contain reap --include-daemons --session " + shorten(printable(value))
	}
	return "contain reap --session " + shorten(printable(value))
}

func (st *stopRun) find(value string) *stopped {
	for _, s := range st.sessions {
		if s.value == value {
			return s
		}
	}
	return nil
}

// values lists the sessions with outcome o.
func (st *stopRun) values(o outcome) []string {
	var out []string
	for _, s := range st.sessions {
		if s.outcome == o {
			out = append(out, s.value)
		}
	}
	return out
}

// pending reports whether an originator that was asked still runs.
func (st *stopRun) pending() bool {
	for _, s := range st.sessions {
		if s.pin != nil && !s.pin.Exited() {
			return true
		}
	}
	return false
}

// killRest is --kill once --timeout has passed: the originators that were
// asked are killed through their pins, and what is left of their
// sessions, orphaned then, is reaped as contain reap would, with SIGKILL
// at once. Only the sessions asked, and of them only the processes that
// their originator plausibly started (its user's, started after it: the
// same check as before asking, session.Implausible) and that reap may
// touch (the user's own unless root, never PID 1, this contain or its
// ancestors): a process that joined a session by its tag alone is left
// alone.
func (st *stopRun) killRest() {
	for _, s := range st.sessions {
		if s.pin == nil || s.pin.Exited() {
			continue
		}
		if err := s.pin.Kill(); err != nil && !errors.Is(err, proc.ErrGone) {
			s.detail = fmt.Sprintf("cannot kill PID %d: %v", s.pid, err)
		}
	}
	// The sessions count as orphaned, as reap needs, once their
	// originators have exited: a second at most.
	b := proc.NewBackoff()
	for deadline := time.Now().Add(time.Second); st.pending() && time.Now().Before(deadline); {
		time.Sleep(b.Next())
	}
	o := session.Options{Filter: session.Filter{Values: st.values(asked)}, IncludeDaemons: st.rq.includeDaemons}
	choose := func() ([]session.Choice, error) {
		chosen, err := reap.Choose(o, st.w.Me)
		st.spareUnclaimed(chosen)
		return chosen, err
	}
	chosen, err := choose()
	if err != nil {
		fmt.Fprintf(st.stderr, "contain: stop: cannot list processes to kill: %v\n", err)
		return
	}
	var targets []session.Choice
	for _, ch := range chosen {
		if ch.Skip == "" {
			targets = append(targets, ch)
		}
	}
	r := reap.Reap(reap.Plan{Targets: targets, Rescan: choose, Signal: killSignal})
	for _, o := range r.Processes {
		st.reaped[proc.ID{PID: o.PID, Start: o.Start}] = o
	}
}

// spareUnclaimed marks, among the processes --kill chose, those it must
// leave alone: a process of a session that was not asked, or one that its
// asked originator cannot have started (another user's, or one started
// before it: session.Implausible on that process), since it joined the
// session by its tag alone.
func (st *stopRun) spareUnclaimed(chosen []session.Choice) {
	for i := range chosen {
		ch := &chosen[i]
		if ch.Skip != "" {
			continue
		}
		s := st.find(ch.Session)
		if s == nil || s.outcome != asked {
			ch.Skip = "its session was not asked"
		} else if why := session.Implausible(s.tool, s.claimed, []session.Process{ch.Process}, st.w.Me); why != "" {
			ch.Skip = "not its originator's: " + why
		}
	}
}

// killSignal is what --kill sends: SIGKILL, TerminateProcess on Windows.
const killSignal = syscall.Signal(9)

func (st *stopRun) close() {
	for _, s := range st.sessions {
		if s.pin != nil {
			s.pin.Close()
		}
	}
}

// exit is stop's status: 1 when nothing matched (a session named that no
// process carries, or no session of the -o tools), a session could not be
// asked (or its originator ignores the signal), a named one was orphaned
// or not asked (its originator not plausibly its own), no session was
// asked though one was not, or --kill left something; 124 when --timeout
// passed; each reason one line on stderr (saysOnStderr), and the count of
// the processes that could not be read when something matched nothing.
func (st *stopRun) exit(done bool) error {
	code := 0
	nothing := false
	if len(st.sessions) == 0 {
		fmt.Fprintf(st.stderr, "contain: stop: nothing to stop: no session matches %s\n", filterWords(session.Filter{Tools: st.rq.set.Tools}))
		nothing = true
	}
	for _, s := range st.sessions {
		switch {
		case s.outcome == refused:
			fmt.Fprintf(st.stderr, "contain: stop: session %s: %s\n", shorten(printable(s.value)), printable(s.detail))
		case s.outcome == notAsked:
			fmt.Fprintf(st.stderr, "contain: stop: not asking PID %d for %s: %s\n", s.pid, shorten(printable(s.value)), printable(s.detail))
		case s.outcome == orphaned && s.named:
			fmt.Fprintf(st.stderr, "contain: stop: session %s is orphaned (%s): %s ends it\n",
				shorten(printable(s.value)), printable(s.detail), st.reapHint(s.value))
		case s.outcome == nothingToStop && s.absent:
			fmt.Fprintf(st.stderr, "contain: stop: nothing to stop: no process carries %s\n", shorten(printable(s.value)))
			nothing = true
		case s.outcome == nothingToStop && s.named:
			why := "no live process"
			if s.detail != "" {
				why += "; " + s.detail
			}
			fmt.Fprintf(st.stderr, "contain: stop: nothing to stop in session %s: %s\n", shorten(printable(s.value)), printable(why))
		}
		// ignoring was said as it was found.
		if s.outcome != asked && st.failed(s, false) {
			code = 1
		}
	}
	if nothing {
		reportUnreadable(st.stderr, st.w.Unreadable)
		code = 1
	}
	if !done {
		n, running := 0, st.w.LiveIn()
		for _, v := range st.values(asked) {
			if len(running[v]) > 0 {
				n++
			}
		}
		left := plural(n, "session is", "sessions are")
		if st.rq.kill {
			fmt.Fprintf(st.stderr, "contain: stop: %s still running after --kill (see the report)\n", left)
			code = 1
		} else {
			fmt.Fprintf(st.stderr, "contain: stop: %s still running after %v (--kill ends them)\n", left, st.rq.timeout)
			if code == 0 {
				code = runcmd.ExitTimedOut
			}
		}
	}
	if code != 0 {
		return &runcmd.ExitError{Code: code}
	}
	return nil
}

// saysOnStderr: exit (or ignored) says what became of s on stderr, so the
// table on stdout leaves it out.
func (st *stopRun) saysOnStderr(s *stopped) bool {
	switch s.outcome {
	case refused, notAsked, ignoring:
		return true
	case orphaned, nothingToStop:
		return s.named
	}
	return false
}

// stopReport is what stop prints.
type stopReport struct {
	TimedOut  bool              `json:"timed_out"` // --timeout passed before the sessions ended
	Killed    bool              `json:"killed"`    // then --kill was used
	Seconds   float64           `json:"seconds"`
	Sessions  []stopSessionJSON `json:"sessions"`
	Processes []reapedJSON      `json:"processes"` // as reap's report has them
}

type stopSessionJSON struct {
	Originator originatorJSON `json:"originator"`
	State      session.State  `json:"state"` // as first found; "" when no process carries it
	Result     string         `json:"result"`
	Failed     bool           `json:"failed"` // could not be asked, or named and orphaned, or left after --kill
	said       bool           // said on stderr: not in the table
}

func (st *stopRun) report(took time.Duration) *stopReport {
	rep := &stopReport{TimedOut: st.timedOut, Killed: st.killed,
		Seconds: took.Seconds(), Sessions: []stopSessionJSON{}, Processes: []reapedJSON{}}
	left := st.w.LiveIn()
	for _, s := range st.sessions {
		rep.Sessions = append(rep.Sessions, stopSessionJSON{Originator: originatorJSON{Value: s.value, Tool: s.tool, PID: s.pid},
			State: s.state, Result: st.sessionResult(s, len(left[s.value]) > 0), Failed: st.failed(s, len(left[s.value]) > 0),
			said: st.saysOnStderr(s)})
	}
	for _, id := range st.w.Order {
		m := st.w.Members[id]
		s := st.find(m.Session)
		result, alive := st.memberResult(m, s)
		started := ""
		if !m.Started.IsZero() {
			started = m.Started.Format(time.RFC3339Nano)
		}
		foundBy := "tag"
		if m.Registered {
			foundBy = "registry"
		}
		// Skipped: not to be ended by this stop; failed: --kill could
		// not end it.
		skipped := s.outcome != asked || m.Spared != ""
		rep.Processes = append(rep.Processes, reapedJSON{PID: m.PID, PPID: m.PPID, Originator: originatorJSON{Value: s.value, Tool: s.tool, PID: s.pid},
			User: m.User, UID: m.UID, Argv: nonNil(m.Argv), Comm: m.Comm, Started: started, FoundBy: foundBy, Skipped: skipped,
			Result: result, Alive: alive, Failed: alive && !skipped && st.killed})
	}
	return rep
}

// failed: s made stop fail (status 1).
func (st *stopRun) failed(s *stopped, left bool) bool {
	return s.outcome == refused || s.outcome == ignoring || s.outcome == orphaned && s.named || s.absent ||
		s.outcome == asked && left && st.rq.kill || s.outcome == notAsked && (s.named || !st.askedAny())
}

// askedAny reports whether stop asked some session's originator. A
// session whose originator is not plausibly its own (notAsked) fails a
// stop that names it, or that asked no session at all, as pkill fails
// when it matched nothing; with -o beside a session that was asked, it
// is only said, so that a tag forged by another user cannot make every
// stop -o of that tool fail.
func (st *stopRun) askedAny() bool { return len(st.values(asked)) > 0 }

func (st *stopRun) sessionResult(s *stopped, left bool) string {
	switch s.outcome {
	case nothingToStop:
		r := "nothing to stop: no live process"
		if s.detail != "" {
			r += "; " + s.detail
		}
		return r
	case orphaned:
		return fmt.Sprintf("left alone: orphaned (%s); %s ends it", s.detail, st.reapHint(s.value))
	case refused:
		return "left alone: " + s.detail
	case notAsked:
		return fmt.Sprintf("left alone: not asking PID %d: %s", s.pid, s.detail)
	case ignoring:
		return "left alone: " + s.detail
	}
	r := fmt.Sprintf("asked PID %d to stop (%s)", s.pid, signals.Name(st.rq.sig))
	if s.detail != "" {
		r += "; " + s.detail
	}
	switch {
	case left && st.killed:
		return r + "; still running after --kill"
	case left:
		return r + "; still running after " + st.rq.timeout.String()
	case st.killed:
		return r + "; killed after " + st.rq.timeout.String() + " (--kill)"
	}
	return r + "; ended"
}

// memberResult says what became of m, a process of s, and whether it
// still runs.
func (st *stopRun) memberResult(m *watch.Member, s *stopped) (string, bool) {
	alive := st.w.Runs(m.Process)
	if o, ok := st.reaped[proc.ID{PID: m.PID, Start: m.Start}]; ok {
		switch o.Ending {
		case reap.WasGone:
			return "ended", o.Alive
		case reap.EndedByFirst:
			o.Ending = reap.Killed // the first signal was the kill
		}
		return o.Result(), o.Alive
	}
	switch {
	case !alive:
		return "ended", false
	case m.Spared != "":
		return "left running: " + m.Spared, true
	}
	switch s.outcome {
	case orphaned:
		return "left alone: orphaned (" + st.reapHint(s.value) + ")", true
	case refused:
		return "left alone: its originator could not be asked", true
	case notAsked:
		return "left alone: its originator was not asked", true
	case ignoring:
		return "left alone: its originator ignores " + signals.Name(st.rq.sig), true
	}
	return "still running", true
}

// write prints the report: the JSON whole, or the processes and the
// sessions that stop did not speak of on stderr.
func (r *stopReport) write(w io.Writer, format string) error {
	if format == "json" {
		return writeJSON(w, r)
	}
	if len(r.Processes) > 0 {
		t := &table{}
		t.row("SESSION", "PID", "COMMAND", "RESULT")
		for _, p := range r.Processes {
			t.row(printable(p.Originator.Value), strconv.Itoa(p.PID), commandLine(session.Process{Argv: p.Argv, Comm: p.Comm}), printable(p.Result))
		}
		t.write(w)
	}
	gap := len(r.Processes) > 0
	for _, s := range r.Sessions {
		if s.said {
			continue
		}
		if gap {
			fmt.Fprintln(w)
			gap = false
		}
		fmt.Fprintf(w, "session %s: %s\n", shorten(printable(s.Originator.Value)), printable(s.Result))
	}
	return nil
}
