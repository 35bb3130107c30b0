package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/stop"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
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
was asked for; so is a /proc that hides other users' processes (hidepid).
A session named that this user cannot see (as contain wait says it: its
originator runs as another user, hidden or unreadable) is no "nothing
to stop": stop says it cannot see it, and why, and exits 1. What is said on
stderr is not repeated in the report on stdout.

Exit status: 0 when every session asked has ended (also when one named had
only daemons left, which is said on stderr), 124 when --timeout passed
first (without --kill), 1 when nothing matched, a session could not be
asked (another user's, an orphaned one named, one named that cannot be
seen, one named whose originator is not plausibly its own, one whose
originator ignores the signal, or no session asked at all though one was
found) or --kill left something, 2 on bad usage.`,
	Flags: []cli.Flag{
		newListFlag(&cli.StringSliceFlag{Name: "originator", Aliases: []string{"o"}, Usage: "every live session of `TOOL`, exactly (repeat the option for more)"}),
		&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "ask the originator with `SIG` (Windows: TERM, INT, BREAK or KILL)"},
		&cli.StringFlag{Name: "timeout", Aliases: []string{"t"}, Value: "0", Usage: "wait at most `DURATION`, then exit 124, or --kill (0: no limit)"},
		&cli.BoolFlag{Name: "kill", Usage: "after --timeout, kill the originator and what is left of the session, as reap does"},
		&cli.BoolFlag{Name: "include-daemons", Usage: "also wait for (and --kill) processes marked RUNNING_PROCESS_IS_DAEMON=1"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "the report: `table` or json"},
		portFlag("the session whose process listens on port `N` (a process that carries the tag; any other is refused)"),
	},
	OnUsageError:    usageError,
	Action:          doStop,
	HideHelpCommand: true,
}

// stopRequest is stop's parsed options.
type stopRequest struct {
	stop.Request
	format string
}

func parseStop(c *cli.Context) (stopRequest, error) {
	var rq stopRequest
	port, err := portOf(c)
	if err != nil {
		return rq, err
	}
	if port == 0 {
		if rq.Set, err = parseSessions(c); err != nil {
			return rq, err
		}
	} else if c.Args().Len() > 0 || c.IsSet("originator") {
		return rq, usageOf(c, "--port names the session: it takes no SESSION or -o")
	}
	if rq.Sig, err = signals.Parse(c.String("signal")); err != nil {
		return rq, usageOf(c, "--signal: %v", err)
	}
	if rq.Sig == 0 {
		return rq, usageOf(c, "--signal: 0 sends nothing (contain wait waits without asking)")
	}
	if rq.Timeout, err = parseTimeout(c); err != nil {
		return rq, err
	}
	if rq.Kill = c.Bool("kill"); rq.Kill && rq.Timeout == 0 {
		return rq, usageOf(c, "--kill: needs --timeout, the time to wait before killing")
	}
	if rq.format, err = outputFormat(c); err != nil {
		return rq, err
	}
	rq.IncludeDaemons = c.Bool("include-daemons")
	if port != 0 {
		// Last: the one part that reads the machine.
		values, keys, err := sessionsOnPort(c, port)
		if err != nil {
			return rq, err
		}
		rq.Set = watch.Set{Values: values, Keys: keys}
	}
	return rq, nil
}

// stopRun is one contain stop, as the command reports it.
type stopRun struct{ *stop.Run }

func doStop(c *cli.Context) error {
	rq, err := parseStop(c)
	if err != nil {
		return err
	}
	st := &stopRun{stop.New(rq.Request, c.App.ErrWriter)}
	defer st.Close()
	began := time.Now()
	done, err := st.Do(context.Background())
	if err != nil {
		return err
	}
	rep := st.report(time.Since(began))
	if err := rep.write(c.App.Writer, rq.format); err != nil {
		return err
	}
	return st.exit(done)
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
	if len(st.Sessions) == 0 {
		text.Fprintf(st.Stderr, "contain: stop: nothing to stop: no session matches %s\n", filterWords(session.Filter{Tools: st.Rq.Set.Tools}))
		nothing = true
	}
	for _, s := range st.Sessions {
		switch {
		case s.Outcome == stop.Refused:
			text.Fprintf(st.Stderr, "contain: stop: session %s: %s\n", text.Shorten(text.Printable(s.Value)), text.Printable(s.Detail))
		case s.Outcome == stop.NotAsked:
			text.Fprintf(st.Stderr, "contain: stop: not asking PID %d%s for %s: %s\n", s.PID, s.Where, text.Shorten(text.Printable(s.Value)), text.Printable(s.Detail))
		case s.Outcome == stop.Orphaned && s.Named:
			text.Fprintf(st.Stderr, "contain: stop: session %s is orphaned (%s): %s ends it\n",
				text.Shorten(text.Printable(s.Value)), text.Printable(s.Detail), st.ReapHint(s.Value))
		case s.Outcome == stop.NothingToStop && s.Absent:
			text.Fprintf(st.Stderr, "contain: stop: nothing to stop: no process carries %s\n", text.Shorten(text.Printable(s.Value)))
			nothing = true
		case s.Outcome == stop.CannotSee:
			text.Fprintf(st.Stderr, "contain: stop: cannot see session %s: %s\n", text.Shorten(text.Printable(s.Value)), text.Printable(s.Detail))
		case s.Outcome == stop.NothingToStop && s.Named:
			why := "no live process"
			if s.Detail != "" {
				why += "; " + s.Detail
			}
			text.Fprintf(st.Stderr, "contain: stop: nothing to stop in session %s: %s\n", text.Shorten(text.Printable(s.Value)), text.Printable(why))
		}
		// ignoring was said as it was found.
		if s.Outcome != stop.Asked && st.failed(s, false) {
			code = 1
		}
	}
	if nothing {
		reportUnreadable(st.Stderr, st.W.Unreadable)
		reportHidden(st.Stderr, hiddenHere())
		code = 1
	}
	if !done {
		n, running := 0, st.W.LiveIn()
		for _, k := range st.Keys(stop.Asked) {
			if len(running[k]) > 0 {
				n++
			}
		}
		left := text.Plural(n, "session is", "sessions are")
		if st.Rq.Kill {
			text.Fprintf(st.Stderr, "contain: stop: %s still running after --kill (see the report)\n", left)
			code = 1
		} else {
			text.Fprintf(st.Stderr, "contain: stop: %s still running after %v (--kill ends them)\n", left, st.Rq.Timeout)
			if code == 0 {
				code = status.TimedOut
			}
		}
	}
	if code != 0 {
		return &status.Error{Code: code}
	}
	return nil
}

// saysOnStderr: exit (or ignored) says what became of s on stderr, so the
// table on stdout leaves it out.
func (st *stopRun) saysOnStderr(s *stop.Stopped) bool {
	switch s.Outcome {
	case stop.Refused, stop.NotAsked, stop.Ignoring, stop.CannotSee:
		return true
	case stop.Orphaned, stop.NothingToStop:
		return s.Named
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
	rep := &stopReport{TimedOut: st.TimedOut, Killed: st.Killed,
		Seconds: took.Seconds(), Sessions: []stopSessionJSON{}, Processes: []reapedJSON{}}
	left := st.W.LiveIn()
	for _, s := range st.Sessions {
		rep.Sessions = append(rep.Sessions, stopSessionJSON{Originator: originatorJSON{Value: s.Value, Tool: s.Tool, PID: s.PID},
			State: s.State, Result: st.sessionResult(s, len(left[s.Key]) > 0), Failed: st.failed(s, len(left[s.Key]) > 0),
			said: st.saysOnStderr(s)})
	}
	for _, id := range st.W.Order {
		m := st.W.Members[id]
		s := st.Find(m.Key)
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
		skipped := s.Outcome != stop.Asked || m.Spared != ""
		rep.Processes = append(rep.Processes, reapedJSON{PID: m.PID, PPID: m.PPID, Originator: originatorJSON{Value: s.Value, Tool: s.Tool, PID: s.PID},
			User: m.User, UID: m.UID, Argv: nonNil(m.Argv), Comm: m.Comm, Started: started, FoundBy: foundBy, Skipped: skipped,
			Result: result, Alive: alive, Failed: alive && !skipped && st.Killed})
	}
	return rep
}

// failed: s made stop fail (status 1).
func (st *stopRun) failed(s *stop.Stopped, left bool) bool {
	return s.Outcome == stop.Refused || s.Outcome == stop.Ignoring || s.Outcome == stop.CannotSee || s.Outcome == stop.Orphaned && s.Named || s.Absent ||
		s.Outcome == stop.Asked && left && st.Rq.Kill || s.Outcome == stop.NotAsked && (s.Named || !st.askedAny())
}

// askedAny reports whether stop asked some session's originator. A
// session whose originator is not plausibly its own (stop.NotAsked) fails a
// stop that names it, or that asked no session at all, as pkill fails
// when it matched nothing; with -o beside a session that was asked, it
// is only said, so that a tag forged by another user cannot make every
// stop -o of that tool fail.
func (st *stopRun) askedAny() bool { return len(st.Keys(stop.Asked)) > 0 }

func (st *stopRun) sessionResult(s *stop.Stopped, left bool) string {
	switch s.Outcome {
	case stop.NothingToStop:
		r := "nothing to stop: no live process"
		if s.Detail != "" {
			r += "; " + s.Detail
		}
		return r
	case stop.Orphaned:
		return fmt.Sprintf("left alone: orphaned (%s); %s ends it", s.Detail, st.ReapHint(s.Value))
	case stop.Refused:
		return "left alone: " + s.Detail
	case stop.NotAsked:
		return fmt.Sprintf("left alone: not asking PID %d%s: %s", s.PID, s.Where, s.Detail)
	case stop.Ignoring:
		return "left alone: " + s.Detail
	case stop.CannotSee:
		return "cannot see it: " + s.Detail
	}
	r := fmt.Sprintf("asked PID %d%s to stop (%s)", s.PID, s.Where, signals.Name(st.Rq.Sig))
	if s.Detail != "" {
		r += "; " + s.Detail
	}
	switch {
	case left && st.Killed:
		return r + "; still running after --kill"
	case left:
		return r + "; still running after " + st.Rq.Timeout.String()
	case st.Killed:
		return r + "; killed after " + st.Rq.Timeout.String() + " (--kill)"
	}
	return r + "; ended"
}

// memberResult says what became of m, a process of s, and whether it
// still runs.
func (st *stopRun) memberResult(m *watch.Member, s *stop.Stopped) (string, bool) {
	alive := st.W.Runs(m.Process)
	if o, ok := st.Reaped[proc.ID{PID: m.PID, Start: m.Start}]; ok {
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
	switch s.Outcome {
	case stop.Orphaned:
		return "left alone: orphaned (" + st.ReapHint(s.Value) + ")", true
	case stop.Refused:
		return "left alone: its originator could not be asked", true
	case stop.NotAsked:
		return "left alone: its originator was not asked", true
	case stop.Ignoring:
		return "left alone: its originator ignores " + signals.Name(st.Rq.Sig), true
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
		t := &text.Table{}
		t.Row("SESSION", "PID", "COMMAND", "RESULT")
		for _, p := range r.Processes {
			t.Row(text.Printable(p.Originator.Value), strconv.Itoa(p.PID), text.CommandLine(p.Argv, p.Comm), text.Printable(p.Result))
		}
		t.Write(w)
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
		text.Fprintf(w, "session %s: %s\n", text.Shorten(text.Printable(s.Originator.Value)), text.Printable(s.Result))
	}
	return nil
}
