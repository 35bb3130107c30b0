package main

import (
	"cmp"
	"context"
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
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/watch"
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
user's, unless root), neither can those of the processes it started; on a
/proc mounted hidepid, another user's processes are not there at all, and
an originator that runs there hidden (kill answers EPERM) is not gone.
wait then says so on stderr, one line per session, and exits 1 at once.

When no process carries a session named, or no session of the -o tools is
found, there is nothing to wait for: wait says so on stderr, one line each,
and exits 0, so that "contain wait SESSION && next" goes on after a run that
has already ended. The count of processes whose environment cannot be read
(other users', unless root) is said then only, where they could hide what
was asked for; so is a /proc that hides other users' processes (hidepid).

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

// parseSessions reads the sessions given to stop or wait as arguments and
// -o options: at least one.
func parseSessions(c *cli.Context) (watch.Set, error) {
	var set watch.Set
	name := c.Command.Name
	for _, a := range c.Args().Slice() {
		if _, _, err := tag.Parse(a); err != nil {
			if strings.HasPrefix(a, "-") && len(a) > 1 {
				return set, usageOf(c, "%q after --: an option, not a session (see contain %s --help)", a, name)
			}
			if hint := pidHint(a); hint != "" {
				return set, usageOf(c, "%v (want a session TOOL:PID; did you mean %s?)", err, hint)
			}
			return set, usageOf(c, "%v (want a session TOOL:PID)", err)
		}
		if !slices.Contains(set.Values, a) {
			set.Values = append(set.Values, a)
		}
	}
	var err error
	if set.Tools, err = toolFilter(c); err != nil {
		return set, err
	}
	if len(set.Values) == 0 && len(set.Tools) == 0 {
		return set, usageOf(c, "name a session TOOL:PID, or a tool with -o TOOL (see contain %s --help)", name)
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
		values[i] = text.Shorten(text.Printable(values[i]))
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
		for _, s := range session.Group(l.Procs, l.Lookup) {
			if s.HerePID() == pid && s.State == session.Alive && !slices.Contains(out, s.Value) {
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
		return 0, usageOf(c, "--timeout: %v", err)
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
	w := watch.New(set, c.Bool("include-daemons"), c.App.ErrWriter)
	began := time.Now()
	deadline := deadlineAfter(timeout)
	first, err := w.Scan()
	if err != nil {
		return err
	}
	held, found := map[string]bool{}, map[string]bool{}
	for i := range first {
		held[first[i].Key()] = w.Holding(first[i].Key()) > 0
		found[first[i].Value] = true
	}
	// A session this user cannot see is not waited for: no end of it
	// could be told. wait says so at once, and fails.
	unseen := map[string]string{}
	for i := range first {
		if s := &first[i]; s.State == session.Alive {
			if why := w.Unseen(s.HerePID()); why != "" {
				unseen[s.Key()] = why
			}
		}
	}
	for _, v := range set.Values {
		if !found[v] {
			if _, pid, err := tag.Parse(v); err == nil {
				if why := w.Unseen(pid); why != "" {
					unseen[v] = why
				}
			}
		}
	}
	done := false
	if len(unseen) == 0 {
		if done, err = w.Wait(context.Background(), deadline, nil); err != nil {
			return err
		}
	}
	rep := waitReport{TimedOut: !done && len(unseen) == 0, Seconds: time.Since(began).Seconds(), Sessions: []waitedJSON{}}
	left := w.LiveIn()
	seen := map[string]bool{}
	for i := range first {
		s := &first[i]
		seen[s.Key()] = true
		rep.add(s.Key(), s.Value, s.Tool, s.PID, held[s.Key()], left[s.Key()], unseen[s.Key()])
	}
	// Sessions of the -o tools that appeared while waiting.
	for _, id := range w.Order {
		if m := w.Members[id]; !seen[m.Key] {
			k, v := m.Key, m.Session
			seen[k], found[v] = true, true
			tool, pid, _ := tag.Parse(v)
			if why := w.Unseen(pid); why != "" && k == v {
				unseen[k] = why
			}
			rep.add(k, v, tool, pid, true, left[k], unseen[k])
		}
	}
	// What matched nothing: a session named that no process carries
	// (and that is not one this user cannot see), or, with none named,
	// no session of the -o tools at all.
	var nothing []string
	for _, v := range set.Values {
		if !found[v] {
			tool, pid, _ := tag.Parse(v)
			rep.add(v, v, tool, pid, false, nil, unseen[v])
			if unseen[v] == "" {
				rep.Sessions[len(rep.Sessions)-1].absent = true
				nothing = append(nothing, "no process carries "+text.Shorten(text.Printable(v)))
			}
		}
	}
	if len(seen) == 0 && len(set.Values) == 0 {
		nothing = append(nothing, "no session matches "+filterWords(session.Filter{Tools: set.Tools}))
	}
	if err := rep.write(c.App.Writer, format); err != nil {
		return err
	}
	for _, n := range nothing {
		text.Fprintf(c.App.ErrWriter, "contain: wait: nothing to wait for: %s\n", n)
	}
	if len(nothing) > 0 {
		reportUnreadable(c.App.ErrWriter, w.Unreadable)
		reportHidden(c.App.ErrWriter, hiddenHere())
	}
	if len(unseen) > 0 {
		for _, v := range slices.Sorted(maps.Keys(unseen)) {
			text.Fprintf(c.App.ErrWriter, "contain: wait: cannot see session %s: %s\n", text.Shorten(text.Printable(v)), text.Printable(unseen[v]))
		}
		return &status.Error{Code: 1}
	}
	if !done {
		err := fmt.Errorf("wait: %s still running after %v", text.Plural(rep.left(), "process", "processes"), timeout)
		return &status.Error{Code: status.TimedOut, Err: err}
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
	key        string         // the session's Key, for the table
}

// add reports the session value: held, whether it had a process to wait
// for; running, what of it still runs; unseen, why it cannot be seen.
func (r *waitReport) add(key, value, tool string, pid int, held bool, running []int, unseen string) {
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
		Result: result, Running: append([]int{}, running...), key: key})
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
	t := &text.Table{}
	t.Row("SESSION", "RESULT")
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
		t.Row(text.Printable(cmp.Or(s.key, s.Originator.Value)), result)
		rows++
	}
	if rows > 0 {
		t.Write(w)
	}
	return nil
}
