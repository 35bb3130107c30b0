package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

var reapCommand = &cli.Command{
	Name:  "reap",
	Usage: "kill orphaned sessions, safely",
	Description: `Kills the processes of orphaned sessions (see contain ps): the first signal,
then SIGKILL after the grace period, and removes leftover cgroups of contain
runs that died. Never a live session nor the originator of one (whatever tag
it carries itself), a malformed tag, a daemon (unless --include-daemons), PID
0 or 1, contain itself or one of its ancestors, or another user's process
unless run as root.

Other tools' sessions are found by their tag alone: a process whose
environment cannot be read, or that wrote its title over it, is not found.
contain run's own sessions are found through their registries too
($XDG_RUNTIME_DIR/contain, or /tmp/contain-UID): once the run has ended,
every process it listed that still runs with the same PID and start time,
and what those started, is reaped whatever its environment shows. A
registry whose run still runs is never used. A daemon contain run
--allow-daemons spared is listed there as a daemon, and its registry kept
after the run while it runs: --include-daemons ends it, even when it wrote
its title over its environment.

Each process is pinned (a pidfd on Linux, a process handle on Windows) and
its start time and tag are checked again through the pin before any signal;
macOS has no such handle, so there they are checked again immediately
before each kill(2). A process whose identity changed is left alone. A
session is stopped (its cgroup frozen, or SIGSTOP) and rescanned until
nothing new appears before it is signalled, so one that forks while it is
reaped is still reaped completely.

The report has one row per process, the same columns in a dry run (-n) as
in a real one: SESSION is the tag it carries (- for none: a process found
in a leftover cgroup only), CGROUP the leftover cgroup it is in (the column
is there when one is), RESULT what became of it; then the cgroups, and the
sessions left alone. The count of processes whose environment cannot be
read (other users', unless root) is said on stderr only where they could
hide what was asked for: when there is nothing to reap, or a --session
named matched no process; and with -v.

A contain run that was killed with its guard and shim may have left a
daemon its registry lacks: one that started after the run, whose parent is
gone (re-parented to PID 1) and whose environment shows no tag (written over
by a title, cleared, hidden). reap cannot tell whether it is the session's,
so it does not signal it: it names it on stderr and exits 1.

Exit status: 0 when nothing of the chosen sessions is left alive (also when
there was nothing to do), 1 when something could not be killed or may be
left (a process reap could not tell, above), 2 on bad usage.`,
	Flags: []cli.Flag{
		newListFlag(&cli.StringSliceFlag{Name: "originator", Aliases: []string{"o"}, Usage: "only sessions of `TOOL`, exactly (repeat the option for more)"}),
		newListFlag(&cli.StringSliceFlag{Name: "session", Usage: "only the session `TOOL:PID` (repeat the option for more)"}),
		&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be killed, kill nothing"},
		&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Value: "TERM", Usage: "the first signal `SIG`"},
		&cli.StringFlag{Name: "grace", Aliases: []string{"g"}, Value: "2s", Usage: "SIGKILL after `DURATION`"},
		&cli.BoolFlag{Name: "include-daemons", Usage: "also reap processes marked RUNNING_PROCESS_IS_DAEMON=1"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "the report: `table` or json"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say on stderr each signal sent"},
		portFlag("only the session whose process listens on port `N` (a process that carries the tag; any other is refused)"),
	},
	OnUsageError:    usageError,
	Action:          doReap,
	HideHelpCommand: true,
}

// reapRequest is reap's parsed options.
type reapRequest struct {
	opts    session.Options
	sig     syscall.Signal
	grace   time.Duration
	dryRun  bool
	verbose bool
	format  string
	log     func(format string, args ...any)
}

func parseReap(c *cli.Context) (reapRequest, error) {
	var rq reapRequest
	if err := noArgs(c); err != nil {
		return rq, err
	}
	var err error
	if rq.format, err = outputFormat(c); err != nil {
		return rq, err
	}
	for _, v := range listValues(c, "session") {
		if _, _, err := tag.Parse(v); err != nil {
			return rq, usageOf(c, "--session: %v (want TOOL:PID)", err)
		}
	}
	tools, err := toolFilter(c)
	if err != nil {
		return rq, err
	}
	if rq.sig, err = signals.Parse(c.String("signal")); err != nil {
		return rq, usageOf(c, "--signal: %v", err)
	}
	if rq.grace, err = parseDuration(c.String("grace")); err != nil {
		return rq, usageOf(c, "--grace: %v", err)
	}
	rq.opts = session.Options{
		Filter:         session.Filter{Tools: tools, Values: listValues(c, "session")},
		IncludeDaemons: c.Bool("include-daemons"),
	}
	port, err := portOf(c)
	if err != nil {
		return rq, err
	}
	if port != 0 {
		if len(tools) > 0 || len(rq.opts.Filter.Values) > 0 {
			return rq, usageOf(c, "--port names the session: it takes no --session or -o")
		}
		// Last: the one part that reads the machine.
		if rq.opts.Filter.Values, rq.opts.Filter.Keys, err = sessionsOnPort(c, port); err != nil {
			return rq, err
		}
	}
	rq.dryRun = c.Bool("dry-run")
	rq.log = nopLogger
	if rq.verbose = c.Bool("verbose"); rq.verbose {
		stderr := c.App.ErrWriter
		rq.log = text.Logger(stderr, "contain: ")
	}
	return rq, nil
}

func nopLogger(string, ...any) {}

func doReap(c *cli.Context) error {
	rq, err := parseReap(c)
	if err != nil {
		return err
	}
	sv, err := reap.Look(rq.opts)
	if err != nil {
		return &status.Error{Code: 1, Err: fmt.Errorf("cannot list processes: %w", err)}
	}
	if sv.RegistryErr != nil {
		text.Fprintf(c.App.ErrWriter, "contain: some registries of contain's sessions cannot be read: %v\n", oneLine(sv.RegistryErr))
	}
	sessions, chosen, skippedSessions, cgroups := sv.Sessions, sv.Chosen, sv.Skipped, sv.Cgroups
	if sv.CgroupErr != nil {
		text.Fprintf(c.App.ErrWriter, "contain: cannot look for leftover cgroups: %v\n", sv.CgroupErr)
	}
	if rq.verbose || len(chosen) == 0 && len(cgroups) == 0 || unmatched(rq.opts.Filter.Values, chosen, skippedSessions) {
		// Said only where it could change the answer: what was asked
		// for may be among them.
		reportUnreadable(c.App.ErrWriter, sv.Unreadable)
	}
	reportHidden(c.App.ErrWriter, sv.Hidden)
	rep := reapReport{SkippedSessions: skippedSessions, lookup: proc.LookupOriginator, filter: rq.opts.Filter,
		tags: tagsOf(sessions), cgroupOf: map[proc.ID]string{}, listening: listeningOf(chosen)}
	alone := sv.LeftAlone()
	for _, o := range alone.Processes {
		rep.add(o, true)
	}
	rep.Cgroups = alone.Cgroups
	if rq.dryRun {
		var dry reap.Report
		dry, rep.cgroupOf = sv.DryRun(reap.Plan{Signal: rq.sig, Grace: rq.grace})
		rep.DryRun = true
		for _, o := range dry.Processes {
			rep.add(o, false)
		}
		rep.Cgroups = append(rep.Cgroups, dry.Cgroups...)
		return rep.write(c.App.Writer, rq.format)
	}

	r := sv.Reap(reap.Plan{Signal: rq.sig, Grace: rq.grace, Log: rq.log})
	for _, o := range r.Processes {
		rep.add(o, false)
	}
	unsure := findUnsure(c.App.ErrWriter, rq.opts.Filter, chosen)
	// The registries of sessions nothing is left of go.
	if n, err := registry.PruneRegistries(); err != nil {
		rq.log("cannot remove every spent registry: %v", oneLine(err))
	} else if n > 0 {
		rq.log("removed %s of ended sessions", text.Plural(n, "registry", "registries"))
	}
	rep.Cgroups = append(rep.Cgroups, r.Cgroups...)
	if err := rep.write(c.App.Writer, rq.format); err != nil {
		return err
	}
	if failed := rep.failed(); failed > 0 {
		return &status.Error{Code: 1, Err: fmt.Errorf("reap: %s could not be killed (see the report)", text.Plural(failed, "process or cgroup", "processes or cgroups"))}
	}
	if unsure > 0 {
		return &status.Error{Code: 1, Err: fmt.Errorf("reap: %s could not be told (see above): not signalled, and maybe left of a session", text.Plural(unsure, "process", "processes"))}
	}
	return nil
}

// findUnsure says on stderr each process that may be left of a chosen
// session and that reap could not tell (reap.FindUnsure), and returns how
// many.
func findUnsure(w io.Writer, f session.Filter, chosen []session.Choice) int {
	known := map[proc.ID]bool{}
	for _, c := range chosen {
		known[proc.ID{PID: c.PID, Start: c.Start}] = true
	}
	want := func(value string) bool {
		tool, _, err := tag.Parse(value)
		return err == nil && (len(f.Tools) == 0 || slices.Contains(f.Tools, tool)) && (len(f.Values) == 0 || slices.Contains(f.Values, value))
	}
	us, err := reap.FindUnsure(want, known)
	if err != nil {
		text.Fprintf(w, "contain: reap: looking for what the registries miss: %v\n", oneLine(err))
	}
	for _, u := range us {
		text.Fprintf(w, "contain: reap: %d (%s) started after session %s's contain run, its parent is gone and %s: it may be the session's, but nothing says so; not signalled\n",
			u.PID, u.Comm, u.Session, u.Why)
	}
	return len(us)
}

// unmatched reports whether a session of values (--session) has no
// process among those chosen or left alone.
func unmatched(values []string, chosen []session.Choice, skipped []session.SkippedSession) bool {
	for _, v := range values {
		if !slices.ContainsFunc(chosen, func(c session.Choice) bool { return c.Session == v }) &&
			!slices.ContainsFunc(skipped, func(s session.SkippedSession) bool { return s.Value == v }) {
			return true
		}
	}
	return false
}

// tagsOf maps each process of sessions to the value it carries.
func tagsOf(sessions []session.Session) map[proc.ID]string {
	m := map[proc.ID]string{}
	for _, s := range sessions {
		for _, p := range s.Processes {
			m[proc.ID{PID: p.PID, Start: p.Start}] = s.Value
		}
	}
	return m
}

// reapReport is what reap prints.
type reapReport struct {
	DryRun          bool
	Processes       []reapedJSON
	SkippedSessions []session.SkippedSession
	Cgroups         []reap.CgroupOutcome
	// lookup tells whether a reported process still runs; nil: take
	// what reap found.
	lookup session.Lookup
	filter session.Filter // the sessions asked for, to say so when none is
	// tags is the value each process listed carries: the SESSION of one
	// that reap found in a leftover cgroup; cgroupOf, in a dry run, the
	// leftover cgroup a target is in.
	tags     map[proc.ID]string
	cgroupOf map[proc.ID]string
	// listening is what the processes chosen listened on before reap
	// signalled them (the ports an orphaned dev server held).
	listening ports.Reading
}

// listeningOf reads the ports of the processes chosen, before any is
// signalled: nothing when there are none.
func listeningOf(chosen []session.Choice) ports.Reading {
	var pids []int
	for _, ch := range chosen {
		if ch.Skip == "" {
			pids = append(pids, ch.PID)
		}
	}
	if len(pids) == 0 {
		return ports.Reading{}
	}
	return ports.Listening(pids)
}

type reapedJSON struct {
	PID        int            `json:"pid"`
	PPID       int            `json:"ppid"`
	Originator originatorJSON `json:"originator"` // the tag it carries: value "" for none
	Cgroup     string         `json:"cgroup"`     // the leftover cgroup it is in, "" for none
	User       string         `json:"user"`
	UID        int            `json:"uid"`
	Argv       []string       `json:"argv"`
	Comm       string         `json:"comm"`
	Started    string         `json:"started"`
	FoundBy    string         `json:"found_by"` // tag, registry or cgroup
	Skipped    bool           `json:"skipped"`  // left alone by the safety rules
	Result     string         `json:"result"`
	Alive      bool           `json:"alive"`  // it runs, as the report is written
	Failed     bool           `json:"failed"` // reap tried to end it and could not
	// Ports are what it listened on before reap signalled it (absent:
	// nothing, or not read).
	Ports []ports.JSON `json:"ports,omitempty"`
}

// add reports o; skipped: left alone by the safety rules. o.Alive is that
// the process still runs: for a process reap tried to end (not skipped,
// not a dry run), that it failed.
func (r *reapReport) add(o reap.Outcome, skipped bool) {
	id := proc.ID{PID: o.PID, Start: o.Start}
	orig := originatorJSON{Value: cmp.Or(o.Session, r.tags[id])}
	if tool, pid, err := tag.Parse(orig.Value); err == nil {
		orig.Tool, orig.PID = tool, pid
	}
	cg := o.Cgroup
	if o.Found != reap.FoundInCgroup {
		cg = r.cgroupOf[id]
	}
	started := ""
	if !o.Started.IsZero() {
		started = o.Started.Format(time.RFC3339Nano)
	}
	foundBy := "tag"
	switch o.Found {
	case reap.FoundInRegistry:
		foundBy = "registry"
	case reap.FoundInCgroup:
		foundBy = "cgroup"
	}
	r.Processes = append(r.Processes, reapedJSON{PID: o.PID, PPID: o.PPID, Originator: orig, Cgroup: cg, User: o.User, UID: o.UID,
		Argv: nonNil(o.Argv), Comm: o.Comm, Started: started, FoundBy: foundBy, Skipped: skipped,
		Result: o.Result(), Alive: watch.StillRuns(r.lookup, o.Process, o.Alive), Failed: o.Alive && !skipped && !r.DryRun})
	if p, _ := r.listening.Known(o.PID); len(p) > 0 && !skipped {
		r.Processes[len(r.Processes)-1].Ports = ports.ToJSON(p)
	}
}

func (r *reapReport) failed() int {
	n := 0
	for _, p := range r.Processes {
		if p.Failed {
			n++
		}
	}
	for _, c := range r.Cgroups {
		if c.Failed {
			n++
		}
	}
	return n
}

type cgroupJSON struct {
	Dir    string `json:"dir"`
	Result string `json:"result"`
	Failed bool   `json:"failed"`
}

type skippedSessionJSON struct {
	Originator string        `json:"originator"`
	State      session.State `json:"state"`
	Reason     string        `json:"reason"`
}

func (r *reapReport) write(w io.Writer, format string) error {
	if format == "json" {
		out := struct {
			DryRun          bool                 `json:"dry_run"`
			Processes       []reapedJSON         `json:"processes"`
			Cgroups         []cgroupJSON         `json:"cgroups"`
			SkippedSessions []skippedSessionJSON `json:"skipped_sessions"`
		}{DryRun: r.DryRun, Processes: r.Processes, Cgroups: []cgroupJSON{}, SkippedSessions: []skippedSessionJSON{}}
		if out.Processes == nil {
			out.Processes = []reapedJSON{}
		}
		for _, c := range r.Cgroups {
			out.Cgroups = append(out.Cgroups, cgroupJSON(c))
		}
		for _, s := range r.SkippedSessions {
			out.SkippedSessions = append(out.SkippedSessions, skippedSessionJSON{s.Value, s.State, s.Reason})
		}
		return writeJSON(w, out)
	}
	if len(r.Processes) == 0 && len(r.Cgroups) == 0 {
		if words := filterWords(r.filter); words != "" {
			text.Fprintf(w, "nothing to reap: no orphaned session matches %s\n", words)
		} else {
			fmt.Fprintln(w, "nothing to reap: no orphaned session")
		}
	}
	if len(r.Processes) > 0 {
		// One meaning a column, in a dry run as in a real one: SESSION
		// the tag, CGROUP the leftover cgroup (when any process is in one).
		withCgroup := slices.ContainsFunc(r.Processes, func(p reapedJSON) bool { return p.Cgroup != "" })
		withPorts := slices.ContainsFunc(r.Processes, func(p reapedJSON) bool { return len(p.Ports) > 0 })
		t := &text.Table{}
		head := []string{"SESSION", "PID", "USER", "COMMAND", "RESULT"}
		if withPorts {
			head = slices.Insert(head, 3, "PORTS")
		}
		if withCgroup {
			head = slices.Insert(head, 3, "CGROUP")
		}
		t.Row(head...)
		for _, p := range r.Processes {
			row := []string{cmp.Or(text.Printable(p.Originator.Value), "-"), strconv.Itoa(p.PID), text.Printable(p.User),
				text.CommandLine(p.Argv, p.Comm), text.Printable(p.Result)}
			if withPorts {
				row = slices.Insert(row, 3, portWords(p.Ports))
			}
			if withCgroup {
				row = slices.Insert(row, 3, cmp.Or(text.Printable(p.Cgroup), "-"))
			}
			t.Row(row...)
		}
		t.Write(w)
	}
	if len(r.Cgroups) > 0 {
		t := &text.Table{}
		t.Row("CGROUP", "RESULT")
		for _, c := range r.Cgroups {
			t.Row(text.Printable(c.Dir), text.Printable(c.Result))
		}
		fmt.Fprintln(w)
		t.Write(w)
	}
	for _, s := range r.SkippedSessions {
		text.Fprintf(w, "left alone: session %s (%s): %s\n", text.Shorten(text.Printable(s.Value)), s.State, text.Printable(s.Reason))
	}
	return nil
}

// oneLine keeps an error that joins several on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
