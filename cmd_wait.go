package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

var waitCommand = &cli.Command{
	Name:      "wait",
	Usage:     "wait until sessions have no live process",
	ArgsUsage: "[TOOL:PID...]",
	Description: `Returns when none of the sessions named (TOOL:PID), nor any session of the
tools given with -o, has a live process: alive or orphaned, whichever tool
started it. Processes marked RUNNING_PROCESS_IS_DAEMON=1 do not count
(unless --include-daemons), nor do this contain and its ancestors.

The processes are listed once, then each one seen is checked by its PID and
start time, quickly at first, then every 200ms at the most; once none is
left, the list is read again, twice, to find what they started meanwhile.

A session this user cannot see is not waited for, nor said to have ended:
when its originator runs and its environment cannot be read (another
user's, unless root), neither can those of the processes it started. wait
then says so on stderr, one line per session, and exits 1 at once.

When no process carries a session named, or no session of the -o tools is
found, there is nothing to wait for: wait says so on stderr, one line each,
and exits 0, so that "contain wait SESSION && next" goes on after a run that
has already ended. The count of processes whose environment cannot be read
(other users', unless root) is said then only, where they could hide what
was asked for.

Exit status: 0 when nothing is left (also when there was nothing to wait
for), 124 when --timeout passed first, 1 when a session cannot be seen or
the processes cannot be listed, 2 on bad usage.`,
	Flags: []cli.Flag{
		newListFlag(&cli.StringSliceFlag{Name: "originator", Aliases: []string{"o"}, Usage: "every session of `TOOL`, exactly (repeat the option for more)"}),
		&cli.StringFlag{Name: "timeout", Aliases: []string{"t"}, Value: "0", Usage: "give up after `DURATION`, exit 124 (0: never)"},
		&cli.BoolFlag{Name: "include-daemons", Usage: "also wait for processes marked RUNNING_PROCESS_IS_DAEMON=1"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "`table` for people, json for scripts"},
	},
	OnUsageError:    usageError,
	Action:          doWait,
	HideHelpCommand: true,
}

// sessionSet is what stop and wait act on: the sessions named TOOL:PID
// and every session of the tools given with -o.
type sessionSet struct {
	values []string
	tools  []string
}

func (s sessionSet) has(sess *session.Session) bool {
	return slices.Contains(s.values, sess.Value) || sess.Tool != "" && slices.Contains(s.tools, sess.Tool)
}

// parseSessions reads the sessions given to stop or wait as arguments and
// -o options: at least one.
func parseSessions(c *cli.Context) (sessionSet, error) {
	var set sessionSet
	name := c.Command.Name
	for _, a := range c.Args().Slice() {
		if _, _, err := tag.Parse(a); err != nil {
			if strings.HasPrefix(a, "-") && len(a) > 1 {
				return set, badUsage("%s: %q: options go before the sessions (see contain %s --help)", name, a, name)
			}
			if hint := pidHint(a); hint != "" {
				return set, badUsage("%s: %v (want a session TOOL:PID; did you mean %s?)", name, err, hint)
			}
			return set, badUsage("%s: %v (want a session TOOL:PID)", name, err)
		}
		if !slices.Contains(set.values, a) {
			set.values = append(set.values, a)
		}
	}
	var err error
	if set.tools, err = toolFilter(c); err != nil {
		return set, err
	}
	if len(set.values) == 0 && len(set.tools) == 0 {
		return set, badUsage("%s: name a session TOOL:PID, or a tool with -o TOOL (see contain %s --help)", name, name)
	}
	return set, nil
}

// pidHint is the session a bare PID given to stop or wait most likely
// means, for people: "CONTAIN:1234" when 1234 is a live contain run, "X:1234"
// when what it started carries that tag (the TOOL it was given with -o), ""
// when a is no PID or names neither.
func pidHint(a string) string {
	pid, err := strconv.Atoi(a)
	if err != nil || pid <= 1 || pid > tag.MaxPID || strconv.Itoa(pid) != a {
		return ""
	}
	values := sessionsOf(pid)
	if len(values) > 3 {
		values = append(values[:3], "...")
	}
	for i := range values {
		values[i] = shorten(printable(values[i]))
	}
	return strings.Join(values, " or ")
}

// sessionsOf lists the live sessions whose originator is pid: the tags
// that processes carry with that PID (so the TOOL that run uses), or,
// when none does (COMMAND not started yet, or it wrote its title over its
// environment), CONTAIN:pid when pid is a contain run this user may ask
// (proc.IsContainRun, as stop checks it). Tests replace it.
var sessionsOf = func(pid int) []string {
	var out []string
	if l, err := proc.ListTagged(); err == nil {
		for _, s := range session.Group(l.Procs, proc.LookupOriginator) {
			if s.PID == pid && s.State == session.Alive && !slices.Contains(out, s.Value) {
				out = append(out, s.Value)
			}
		}
	}
	if len(out) > 0 {
		slices.Sort(out)
		return out
	}
	pin, err := proc.PinOriginator(pid, math.MaxUint64, reap.Me())
	if err != nil {
		return nil
	}
	defer pin.Close()
	if pin.Claimed().Contain {
		return []string{session.ContainTool + ":" + strconv.Itoa(pid)}
	}
	return nil
}

// parseTimeout reads --timeout: 0 means none.
func parseTimeout(c *cli.Context) (time.Duration, error) {
	d, err := parseDuration(c.String("timeout"))
	if err != nil {
		return 0, badUsage("--timeout: %v", err)
	}
	return d, nil
}

// deadlineAfter is when d from now ends; the zero time for no limit.
func deadlineAfter(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// watch follows the processes of a set of sessions for stop and wait:
// every one seen, and which of them still hold the wait.
type watch struct {
	set            sessionSet
	includeDaemons bool
	me             session.Reaper
	list           func() (proc.Listing, error)
	lookup         session.Lookup
	unseen         func(pid int) string // proc.Unseen: why a session of that originator cannot be seen
	stderr         io.Writer            // where a registry that could not be read is said, once
	scans          int
	// unreadable counts, by reason, the processes whose environment the
	// first listing could not read: said (sayUnreadable) only when
	// something asked for matched nothing.
	unreadable map[string]int

	members map[proc.ID]*member // every process of the set seen
	order   []proc.ID           // in the order seen
	live    []proc.ID           // those that held the wait when last seen
}

// member is one process of a watched session.
type member struct {
	session.Process
	session string
	// spared says why it does not hold the wait ("" if it does): a
	// daemon, this contain, one of its ancestors.
	spared string
}

func newWatch(set sessionSet, includeDaemons bool, stderr io.Writer) *watch {
	return &watch{set: set, includeDaemons: includeDaemons, me: reap.Me(), list: reap.ListForReap,
		lookup: proc.LookupOriginator, unseen: proc.Unseen, stderr: stderr, members: map[proc.ID]*member{}}
}

// spared says why p does not hold stop or wait: a daemon is meant to
// outlive its originator, and a stop run from inside the session it stops
// must not wait for itself.
func (w *watch) spared(p session.Process) string {
	switch {
	case p.PID == w.me.PID:
		return "this contain"
	case w.me.Ancestors[p.PID]:
		return "an ancestor of this contain"
	case p.Daemon && !w.includeDaemons:
		return "a daemon (--include-daemons counts it)"
	}
	return ""
}

// scan lists the tagged processes now and returns the sessions of the
// set, each process recorded; the live ones are those that hold the wait.
func (w *watch) scan() ([]session.Session, error) {
	l, err := w.list()
	if err != nil {
		return nil, &runcmd.ExitError{Code: 1, Err: fmt.Errorf("cannot list processes: %w", err)}
	}
	if w.scans++; w.scans == 1 {
		w.unreadable = l.Unreadable
		if l.Registry != nil && w.stderr != nil {
			fmt.Fprintf(w.stderr, "contain: some registries of contain's sessions cannot be read: %v\n", oneLine(l.Registry))
		}
	}
	var out []session.Session
	w.live = w.live[:0]
	for _, s := range session.Group(l.Procs, w.lookup) {
		if !w.set.has(&s) {
			continue
		}
		out = append(out, s)
		for _, p := range s.Processes {
			id := proc.ID{PID: p.PID, Start: p.Start}
			m := w.members[id]
			if m == nil {
				m = &member{Process: p, session: s.Value, spared: w.spared(p)}
				if o := s.Originator; m.spared == "" && s.State == session.Alive && o.Owned && !o.Owns(p) {
					// A tag is a claim anyone can make: another user's
					// process that carries a live session's value is no
					// process of its originator's, and holds neither
					// stop nor wait (else anyone could hold them).
					m.spared = fmt.Sprintf("another user's process (%s), not its originator's", cmp.Or(p.User, strconv.Itoa(p.UID)))
				}
				w.members[id] = m
				w.order = append(w.order, id)
			}
			if m.spared == "" {
				w.live = append(w.live, id)
			}
		}
	}
	return out, nil
}

// narrow keeps to the sessions values from now on.
func (w *watch) narrow(values []string) {
	w.set = sessionSet{values: values}
	w.live = slices.DeleteFunc(w.live, func(id proc.ID) bool { return !slices.Contains(values, w.members[id].session) })
}

// holding counts the processes of the session value that hold the wait
// as last seen.
func (w *watch) holding(value string) int {
	n := 0
	for _, id := range w.live {
		if w.members[id].session == value {
			n++
		}
	}
	return n
}

// runs tells whether p runs now: its PID names a process that is not a
// zombie and started when p did (or that cannot be told).
func (w *watch) runs(p session.Process) bool {
	return (&reapReport{lookup: w.lookup}).stillRuns(p, true)
}

// anyLive reports whether a process that held the wait still runs. It
// checks them in the order seen and stops at the first that runs, so that
// a long wait costs one lookup per check.
func (w *watch) anyLive() bool {
	for len(w.live) > 0 {
		if w.runs(w.members[w.live[0]].Process) {
			return true
		}
		w.live = w.live[1:]
	}
	return false
}

// wait returns true once no process of the set holds the wait, nor does
// pending (the originators stop asked) report any; false when deadline
// (zero: none) passes first. The processes seen are checked at once, then
// with a backoff; once none is left, two listings in a row must find none:
// a process that a member started while the first was read, and that the
// first missed, is in the second.
func (w *watch) wait(deadline time.Time, pending func() bool) (bool, error) {
	b := proc.NewBackoff()
	began := time.Now()
	for {
		if !w.anyLive() && (pending == nil || !pending()) {
			empty := 0
			for empty < 2 {
				if _, err := w.scan(); err != nil {
					return false, err
				}
				if len(w.live) > 0 {
					break
				}
				empty++
			}
			if empty == 2 {
				return true, nil
			}
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return false, nil
		}
		// Quick at first, then at most a tenth of the time waited so far,
		// up to waitMost: a long wait costs a few wake-ups a second.
		d := max(b.Next(), min(time.Since(began)/10, waitMost))
		if !deadline.IsZero() {
			d = min(d, time.Until(deadline))
		}
		time.Sleep(d)
	}
}

// waitMost is the longest a wait sleeps between two checks.
const waitMost = 200 * time.Millisecond

// liveIn lists, by session, the processes that still hold the wait.
func (w *watch) liveIn() map[string][]int {
	out := map[string][]int{}
	for _, id := range w.order {
		if m := w.members[id]; m.spared == "" && w.runs(m.Process) {
			out[m.session] = append(out[m.session], m.PID)
		}
	}
	return out
}

func doWait(c *cli.Context) error {
	set, err := parseSessions(c)
	if err != nil {
		return err
	}
	timeout, err := parseTimeout(c)
	if err != nil {
		return err
	}
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	w := newWatch(set, c.Bool("include-daemons"), c.App.ErrWriter)
	began := time.Now()
	deadline := deadlineAfter(timeout)
	first, err := w.scan()
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for i := range first {
		held[first[i].Value] = w.holding(first[i].Value) > 0
	}
	// A session this user cannot see is not waited for: no end of it
	// could be told. wait says so at once, and fails.
	unseen := map[string]string{}
	for i := range first {
		if s := &first[i]; s.State == session.Alive {
			if why := w.unseen(s.PID); why != "" {
				unseen[s.Value] = why
			}
		}
	}
	for _, v := range set.values {
		if _, found := held[v]; !found {
			if _, pid, err := tag.Parse(v); err == nil {
				if why := w.unseen(pid); why != "" {
					unseen[v] = why
				}
			}
		}
	}
	done := false
	if len(unseen) == 0 {
		if done, err = w.wait(deadline, nil); err != nil {
			return err
		}
	}
	rep := waitReport{TimedOut: !done && len(unseen) == 0, Seconds: time.Since(began).Seconds(), Sessions: []waitedJSON{}}
	left := w.liveIn()
	seen := map[string]bool{}
	for i := range first {
		s := &first[i]
		seen[s.Value] = true
		rep.add(s.Value, s.Tool, s.PID, held[s.Value], left[s.Value], unseen[s.Value])
	}
	// Sessions of the -o tools that appeared while waiting.
	for _, id := range w.order {
		if v := w.members[id].session; !seen[v] {
			seen[v] = true
			tool, pid, _ := tag.Parse(v)
			if why := w.unseen(pid); why != "" {
				unseen[v] = why
			}
			rep.add(v, tool, pid, true, left[v], unseen[v])
		}
	}
	// What matched nothing: a session named that no process carries
	// (and that is not one this user cannot see), or, with none named,
	// no session of the -o tools at all.
	var nothing []string
	for _, v := range set.values {
		if !seen[v] {
			tool, pid, _ := tag.Parse(v)
			rep.add(v, tool, pid, false, nil, unseen[v])
			if unseen[v] == "" {
				rep.Sessions[len(rep.Sessions)-1].absent = true
				nothing = append(nothing, "no process carries "+shorten(printable(v)))
			}
		}
	}
	if len(seen) == 0 && len(set.values) == 0 {
		nothing = append(nothing, "no session matches "+filterWords(session.Filter{Tools: set.tools}))
	}
	if err := rep.write(c.App.Writer, format); err != nil {
		return err
	}
	for _, n := range nothing {
		fmt.Fprintf(c.App.ErrWriter, "contain: wait: nothing to wait for: %s\n", n)
	}
	if len(nothing) > 0 {
		reportUnreadable(c.App.ErrWriter, w.unreadable)
	}
	if len(unseen) > 0 {
		for _, v := range slices.Sorted(maps.Keys(unseen)) {
			fmt.Fprintf(c.App.ErrWriter, "contain: wait: cannot see session %s: %s\n", shorten(printable(v)), printable(unseen[v]))
		}
		return &runcmd.ExitError{Code: 1}
	}
	if !done {
		err := fmt.Errorf("wait: %s still running after %v", plural(rep.left(), "process", "processes"), timeout)
		return &runcmd.ExitError{Code: runcmd.ExitTimedOut, Err: err}
	}
	// Nothing to wait for is done waiting (SPEC: 0), said once above:
	// contain wait SESSION && next goes on after a run that has ended.
	return nil
}

// waitReport is what wait prints.
type waitReport struct {
	TimedOut bool         `json:"timed_out"`
	Seconds  float64      `json:"waited_seconds"`
	Sessions []waitedJSON `json:"sessions"`
}

type waitedJSON struct {
	Originator originatorJSON `json:"originator"`
	Result     string         `json:"result"` // ended, still running, nothing to wait for, cannot see it: why
	Running    []int          `json:"running"`
	absent     bool           // named, and no process carries it: said on stderr, not in the table
}

// add reports the session value: held, whether it had a process to wait
// for; running, what of it still runs; unseen, why it cannot be seen.
func (r *waitReport) add(value, tool string, pid int, held bool, running []int, unseen string) {
	result := "ended"
	switch {
	case unseen != "":
		result = "cannot see it: " + unseen
	case len(running) > 0:
		result = "still running"
	case !held:
		result = "nothing to wait for"
	}
	r.Sessions = append(r.Sessions, waitedJSON{Originator: originatorJSON{Value: value, Tool: tool, PID: pid},
		Result: result, Running: append([]int{}, running...)})
}

func (r *waitReport) left() int {
	n := 0
	for _, s := range r.Sessions {
		n += len(s.Running)
	}
	return n
}

// write prints the report: the JSON whole, or a table of the sessions
// found (one that no process carries is said on stderr instead).
func (r *waitReport) write(w io.Writer, format string) error {
	if format == "json" {
		return writeJSON(w, r)
	}
	t := &table{}
	t.row("SESSION", "RESULT")
	rows := 0
	for _, s := range r.Sessions {
		if s.absent {
			continue
		}
		result := s.Result
		if n := len(s.Running); n > 0 {
			pids := make([]string, n)
			for i, p := range s.Running {
				pids[i] = strconv.Itoa(p)
			}
			result += ": " + strings.Join(pids, " ")
		}
		t.row(printable(s.Originator.Value), result)
		rows++
	}
	if rows > 0 {
		t.write(w)
	}
	return nil
}
