package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

var psCommand = &cli.Command{
	Name:  "ps",
	Usage: "list the processes that carry RUNNING_PROCESS_ORIGINATOR, by session",
	Description: `Lists every visible process whose environment holds
RUNNING_PROCESS_ORIGINATOR=TOOL:PID, whichever tool set it, grouped by
session (the processes that carry the same value).

A session is alive when a process with that PID runs, is not a zombie and
started no later than the session's earliest process; otherwise it is
orphaned (a reused PID is not the originator). A session whose processes are
all marked RUNNING_PROCESS_IS_DAEMON=1 is shown as daemon; a value that is
not TOOL:PID as malformed. A session made in another PID namespace (a
container) is judged there, and shown as TOOL:PID@pidns:INODE; where that
cannot be told from here it is unknown, never orphaned.

Each process shows the CPU time it has used (user and system, all its
threads) and its resident memory; each session, its processes and their
sums. They are read with the rest (Linux: the stat line read for the
process's identity), once per process.

Processes whose environment cannot be read (other users' without root), or
that wrote their process title over it (redis-server, nginx, postgres), are
never guessed at: --format json counts them by reason (unreadable), and one
line on stderr does when ps shows no session, where they could hide one (as
stop, wait and reap say it only when what was asked for matched nothing).
Exit status 0, 1 if the scan failed.`,
	Flags: []cli.Flag{
		newListFlag(&cli.StringSliceFlag{Name: "originator", Aliases: []string{"o"}, Usage: "only sessions of `TOOL`, exactly (repeat the option for more)"}),
		&cli.BoolFlag{Name: "orphans", Usage: "only orphaned sessions"},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "`table` for people, json for scripts"},
		portFlag("who listens on port `N`: the session, its state and the process (exit 1 when it is no session's)"),
	},
	OnUsageError:    usageError,
	Action:          doPs,
	HideHelpCommand: true,
}

func badUsage(format string, args ...any) error {
	return &status.Error{Code: 2, Err: fmt.Errorf(format, args...)}
}

// usageOf is a usage error of c's command, in the one form every command's
// has: "contain: CMD: what is wrong".
func usageOf(c *cli.Context, format string, args ...any) error {
	return badUsage("%s: %s", c.Command.Name, fmt.Sprintf(format, args...))
}

// outputFormat checks --format.
func outputFormat(c *cli.Context) (string, error) {
	f := c.String("format")
	if f != "table" && f != "json" {
		return "", usageOf(c, "--format: %q is not table or json", f)
	}
	return f, nil
}

// noArgs refuses positional arguments to a command that takes none.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return usageOf(c, "unexpected argument %q (see contain %s --help)", c.Args().First(), c.Command.Name)
	}
	return nil
}

// toolFilter reads the -o options of ps and reap, which are checked alike:
// each names a TOOL that a well-formed tag can carry, whoever wrote it.
func toolFilter(c *cli.Context) ([]string, error) {
	tools := listValues(c, "originator")
	for _, t := range tools {
		if err := tag.CheckTool(t); err != nil {
			return nil, usageOf(c, "--originator: %v", err)
		}
		if strings.Contains(t, ":") {
			// As contain run refuses it: TOOL:PID is a session, which
			// -o would quietly match nothing with.
			return nil, usageOf(c, "--originator: %q has \":\": -o takes a TOOL; TOOL:PID names a session%s", t, sessionHint(c.Command.Name))
		}
	}
	return tools, nil
}

// sessionHint says how cmd names a session, for a TOOL:PID given to -o.
func sessionHint(cmd string) string {
	switch cmd {
	case "reap":
		return " (reap --session TOOL:PID)"
	case "stop", "wait":
		return " (contain " + cmd + " TOOL:PID)"
	}
	return ""
}

func doPs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := outputFormat(c)
	if err != nil {
		return err
	}
	tools, err := toolFilter(c)
	if err != nil {
		return err
	}
	port, err := portOf(c)
	if err != nil {
		return err
	}
	if port != 0 {
		if len(tools) > 0 || c.Bool("orphans") {
			return usageOf(c, "--port names a process: it takes no -o or --orphans")
		}
		return doPsPort(c, port, format)
	}
	all, err := containment.Sessions(session.Filter{})
	if err != nil {
		return &status.Error{Code: 1, Err: err}
	}
	sessions, unreadable := all.Sessions, all.Unreadable
	f := session.Filter{Tools: tools, Orphaned: c.Bool("orphans")}
	var shown []session.Session
	for i := range sessions {
		if f.Match(&sessions[i]) {
			shown = append(shown, sessions[i])
		}
	}
	if len(shown) == 0 {
		// Said only where it could change the answer: what was looked
		// for may be among them.
		reportUnreadable(c.App.ErrWriter, unreadable)
	}
	// Other users' sessions are not listed at all: said always.
	reportHidden(c.App.ErrWriter, all.Hidden)
	// The ports each listed process listens on: its sockets, read now.
	listening := ports.Listening(listedPIDs(shown))
	if format == "json" {
		sj := jsonSessions(shown)
		for i := range sj {
			for j := range sj[i].Processes {
				pj := &sj[i].Processes[j]
				if p, ok := listening.Known(pj.PID); ok {
					pj.Ports = ports.ToJSON(p)
				} else {
					pj.PortsAbsent = listening.Unknown[pj.PID]
				}
			}
		}
		return writeJSON(c.App.Writer, psJSON{Sessions: sj, Unreadable: unreadable})
	}
	if len(shown) == 0 && len(sessions) > 0 {
		text.Fprintf(c.App.Writer, "no session matches %s: %s in all\n", filterWords(f), text.Plural(len(sessions), "session", "sessions"))
		return nil
	}
	if len(shown) == 0 && (len(f.Tools) > 0 || f.Orphaned) {
		text.Fprintf(c.App.Writer, "no session matches %s: no process carries %s\n", filterWords(f), tag.Var)
		return nil
	}
	writePsTable(c.App.Writer, shown, listening)
	return nil
}

// filterWords says f as the options that asked for it: -o CLUD --orphans.
func filterWords(f session.Filter) string {
	var w []string
	for _, t := range f.Tools {
		w = append(w, "-o "+text.Shorten(text.Printable(t)))
	}
	for _, v := range f.Values {
		w = append(w, "--session "+text.Shorten(text.Printable(v)))
	}
	if f.Orphaned {
		w = append(w, "--orphans")
	}
	return strings.Join(w, " ")
}

// reportUnreadable says on stderr how many processes could not be read, and
// why, in one line.
func reportUnreadable(w io.Writer, unreadable map[string]int) {
	if len(unreadable) == 0 {
		return
	}
	var parts []string
	total := 0
	for _, reason := range slices.Sorted(maps.Keys(unreadable)) {
		n := unreadable[reason]
		total += n
		parts = append(parts, fmt.Sprintf("%d: %s", n, reason))
	}
	hint := ""
	if unreadable["permission denied"] > 0 && !proc.Privileged() {
		hint = "; other users' processes need " + proc.PrivilegeName
	}
	text.Fprintf(w, "contain: skipped %s whose environment cannot be read (%s%s)\n",
		text.Plural(total, "process", "processes"), strings.Join(parts, ", "), hint)
}

// plural is text.Plural.

// psJSON is `contain ps --format json`.
type psJSON struct {
	Sessions   []sessionJSON  `json:"sessions"`
	Unreadable map[string]int `json:"unreadable"`
}

type originatorJSON struct {
	Value string `json:"value"`
	Tool  string `json:"tool,omitempty"` // absent when malformed
	PID   int    `json:"pid,omitempty"`
	// Where the session's PID namespace is not the viewer's: its inode
	// (/proc/PID/ns/pid), and the originator's PID as the viewer sees
	// it, when it was found.
	PIDNamespace uint64 `json:"pid_namespace,omitempty"`
	PIDHere      int    `json:"pid_here,omitempty"`
}

type sessionJSON struct {
	Originator originatorJSON `json:"originator"`
	State      session.State  `json:"state"`
	Reason     string         `json:"reason"`
	Count      int            `json:"count"`
	Processes  []processJSON  `json:"processes"`
	Totals     totalsJSON     `json:"totals"`
}

// totalsJSON is a session's usage: the sums over its processes whose
// usage could be read (usage_unknown counts the others).
type totalsJSON struct {
	Processes    int     `json:"processes"` // all live: the scans leave zombies out
	CPUSeconds   float64 `json:"cpu_seconds"`
	RSSBytes     uint64  `json:"rss_bytes"`
	UsageUnknown int     `json:"usage_unknown"`
}

type processJSON struct {
	PID        int            `json:"pid"`
	PPID       int            `json:"ppid"`
	Originator originatorJSON `json:"originator"`
	State      session.State  `json:"state"`
	Daemon     bool           `json:"daemon"`
	// Registered: found through the registry of the contain run that
	// started it, not by its tag, which its environment no longer shows
	// (a title written over it), as contain reap finds it.
	Registered bool     `json:"registered,omitempty"`
	Started    string   `json:"started"` // RFC 3339, to the clock tick
	User       string   `json:"user"`
	UID        int      `json:"uid"`
	Argv       []string `json:"argv"`
	Comm       string   `json:"comm"`
	// The process's usage: null when it could not be read, and
	// usage_absent says why.
	CPUSeconds  *float64 `json:"cpu_seconds"`
	RSSBytes    *uint64  `json:"rss_bytes"`
	UsageAbsent string   `json:"usage_absent,omitempty"`
	// The TCP and UDP sockets it listens on ([] for none); null when
	// they could not be read, and ports_absent says why.
	Ports       []ports.JSON `json:"ports"`
	PortsAbsent string       `json:"ports_absent,omitempty"`
}

func originatorOf(s *session.Session) originatorJSON {
	o := originatorJSON{Value: s.Value, Tool: s.Tool, PID: s.PID}
	if s.NS != 0 {
		o.PIDNamespace, o.PIDHere = s.NS, s.ViewPID
	}
	return o
}

func jsonSessions(sessions []session.Session) []sessionJSON {
	out := make([]sessionJSON, 0, len(sessions))
	for i := range sessions {
		s := &sessions[i]
		t := s.Totals()
		sj := sessionJSON{Originator: originatorOf(s), State: s.State, Reason: s.Reason, Count: len(s.Processes),
			Totals: totalsJSON{Processes: t.Processes, CPUSeconds: t.CPU.Seconds(), RSSBytes: t.RSS, UsageUnknown: t.Unknown}}
		for _, p := range s.Processes {
			pj := processJSON{
				PID: p.PID, PPID: p.PPID, Originator: sj.Originator, State: s.StateOf(p), Daemon: p.Daemon, Registered: p.Registered,
				Started: p.Started.Format(time.RFC3339Nano), User: p.User, UID: p.UID, Argv: nonNil(p.Argv), Comm: p.Comm,
			}
			if u := p.Usage; u.Known {
				cpu, rss := u.CPU.Seconds(), u.RSS
				pj.CPUSeconds, pj.RSSBytes = &cpu, &rss
			} else {
				pj.UsageAbsent = cmp.Or(u.Why, "not read")
			}
			sj.Processes = append(sj.Processes, pj)
		}
		out = append(out, sj)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	// Compact: a thousand processes indented are twice the bytes; jq
	// shows it indented.
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		return &status.Error{Code: 1, Err: fmt.Errorf("cannot write the output: %w", err)}
	}
	return nil
}

// writePsTable prints a summary line per session (its processes, their
// CPU time and resident memory summed), then the processes, one row each,
// the sessions apart by a blank line.
func writePsTable(w io.Writer, sessions []session.Session, listening ports.Reading) {
	if len(sessions) == 0 {
		text.Fprintf(w, "no process carries %s\n", tag.Var)
		return
	}
	sum := &text.Table{}
	sum.Row("SESSION", "STATE", "PROCESSES", "CPU", "RSS", "WHY")
	for i := range sessions {
		s := &sessions[i]
		t := s.Totals()
		cpu, rss := "-", "-"
		if t.Unknown < t.Processes {
			more := "" // "+": the sums leave out processes whose usage is unknown
			if t.Unknown > 0 {
				more = "+"
			}
			cpu, rss = text.CPUTime(t.CPU)+more, text.MemSize(t.RSS)+more
		}
		sum.Row(text.Printable(s.Key()), string(s.State), strconv.Itoa(t.Processes), cpu, rss, text.Printable(s.Reason))
	}
	sum.Write(w)
	fmt.Fprintln(w)

	procs := &text.Table{}
	procs.Row("ORIGINATOR", "STATE", "PID", "PPID", "STARTED", "USER", "CPU", "RSS", "PORTS", "COMMAND")
	for i := range sessions {
		s := &sessions[i]
		if i > 0 {
			procs.Gap()
		}
		for _, p := range s.Processes {
			cpu, rss := "-", "-"
			if p.Usage.Known {
				cpu, rss = text.CPUTime(p.Usage.CPU), text.MemSize(p.Usage.RSS)
			}
			procs.Row(text.Printable(s.Key()), string(s.StateOf(p)), strconv.Itoa(p.PID), strconv.Itoa(p.PPID),
				p.Started.Format("2006-01-02 15:04:05"), text.Printable(p.User), cpu, rss, portColumn(listening, p.PID), text.CommandLine(p.Argv, p.Comm))
		}
	}
	procs.Write(w)
}
