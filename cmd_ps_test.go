package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/session"
)

func TestPsTable(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 1, 0, time.Local)
	daemon := session.Process{PID: 51240, PPID: 51234, Started: at, User: "root", Argv: []string{"ssh-agent"}, Daemon: true,
		Usage: session.Usage{CPU: 61230 * time.Millisecond, RSS: 12900 << 10, Known: true}}
	sessions := []session.Session{
		{Value: "CLUD:4242", Tool: "CLUD", PID: 4242, State: session.Orphaned, Reason: "PID 4242 is gone", Processes: []session.Process{
			{PID: 51234, PPID: 1, Started: at, User: "root", Argv: []string{"sleep", "300"},
				Usage: session.Usage{CPU: 10 * time.Millisecond, RSS: 1 << 20, Known: true}},
			daemon,
		}},
		{Value: "X:abc", State: session.Malformed, Reason: "not TOOL:PID", Processes: []session.Process{
			{PID: 7, PPID: 1, Started: at, User: "nobody", Comm: "kworker", Usage: session.Usage{Why: "permission denied"}},
		}},
		{Value: "Y:9", Tool: "Y", PID: 9, State: session.Alive, Reason: "PID 9 is running", Processes: []session.Process{
			{PID: 8, PPID: 9, Started: at, User: "nobody", Argv: []string{"a"}, Usage: session.Usage{CPU: time.Second, RSS: 2 << 30, Known: true}},
			{PID: 10, PPID: 9, Started: at, User: "nobody", Argv: []string{"b"}},
		}},
	}
	var b bytes.Buffer
	listening := ports.Reading{By: map[int][]ports.Port{51234: nil, 51240: {{Proto: "tcp", Addr: "::", Port: 3000},
		{Proto: "tcp", Addr: "0.0.0.0", Port: 3000}, {Proto: "udp", Addr: "127.0.0.1", Port: 53}}, 8: nil, 10: nil},
		Unknown: map[int]string{7: "permission denied"}}
	writePsTable(&b, sessions, listening)
	want := `SESSION    STATE      PROCESSES  CPU       RSS    WHY
CLUD:4242  orphaned   2          1:01.24   13.6M  PID 4242 is gone
X:abc      malformed  1          -         -      not TOOL:PID
Y:9        alive      2          0:01.00+  2.0G+  PID 9 is running

ORIGINATOR  STATE      PID    PPID   STARTED              USER    CPU      RSS    PORTS                   COMMAND
CLUD:4242   orphaned   51234  1      2026-11-21 10:00:01  root    0:00.01  1.0M   -                       sleep 300
CLUD:4242   daemon     51240  51234  2026-11-21 10:00:01  root    1:01.23  12.6M  127.0.0.1:53/udp,:3000  ssh-agent

X:abc       malformed  7      1      2026-11-21 10:00:01  nobody  -        -      ?                       [kworker]

Y:9         alive      8      9      2026-11-21 10:00:01  nobody  0:01.00  2.0G   -                       a
Y:9         alive      10     9      2026-11-21 10:00:01  nobody  -        -      -                       b
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	writePsTable(&b, nil, ports.Reading{})
	if !strings.Contains(b.String(), "no process carries RUNNING_PROCESS_ORIGINATOR") {
		t.Errorf("empty table: %q", b.String())
	}

	// JSON: each process's usage, or null and why; each session's sums.
	out := jsonSessions(sessions)
	p := out[0].Processes[1]
	if p.CPUSeconds == nil || *p.CPUSeconds != 61.23 || p.RSSBytes == nil || *p.RSSBytes != 12900<<10 || p.UsageAbsent != "" {
		t.Errorf("the daemon's usage: %v %v %q", p.CPUSeconds, p.RSSBytes, p.UsageAbsent)
	}
	if got, want := out[0].Totals, (totalsJSON{Processes: 2, CPUSeconds: 61.24, RSSBytes: 13924 << 10}); got != want {
		t.Errorf("CLUD:4242's totals %+v, want %+v", got, want)
	}
	p = out[1].Processes[0]
	if p.CPUSeconds != nil || p.RSSBytes != nil || p.UsageAbsent != "permission denied" {
		t.Errorf("an unknown usage: %v %v %q", p.CPUSeconds, p.RSSBytes, p.UsageAbsent)
	}
	if got, want := out[1].Totals, (totalsJSON{Processes: 1, UsageUnknown: 1}); got != want {
		t.Errorf("X:abc's totals %+v, want %+v", got, want)
	}
	if got, want := out[2].Totals, (totalsJSON{Processes: 2, CPUSeconds: 1, RSSBytes: 2 << 30, UsageUnknown: 1}); got != want || out[2].Processes[1].UsageAbsent != "not read" {
		t.Errorf("Y:9's totals %+v, want %+v; %q", got, want, out[2].Processes[1].UsageAbsent)
	}
}

func TestReportUnreadable(t *testing.T) {
	var b bytes.Buffer
	reportUnreadable(&b, map[string]int{})
	if b.Len() != 0 {
		t.Errorf("nothing unreadable, yet: %q", b.String())
	}
	reportUnreadable(&b, map[string]int{"unexpected content": 1, "permission denied": 3})
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "contain: skipped 4 processes whose environment cannot be read (3: permission denied, 1: unexpected content") {
		t.Errorf("unreadable line: %q", got)
	}
}

func TestReapReportFailed(t *testing.T) {
	var r reapReport
	r.add(reap.Outcome{Process: session.Process{PID: 1}, Session: "X:9", Ending: reap.LeftAlone, Detail: "PID 1 is never signalled", Alive: true}, true)
	r.add(reap.Outcome{Process: session.Process{PID: 10}, Session: "X:9", Ending: reap.Killed}, false)
	if n := r.failed(); n != 0 {
		t.Errorf("failed = %d: a skipped process is no failure", n)
	}
	r.add(reap.Outcome{Process: session.Process{PID: 11}, Session: "X:9", Ending: reap.Survived, Alive: true}, false)
	r.Cgroups = append(r.Cgroups, reap.CgroupOutcome{Dir: "/x", Result: "busy", Failed: true})
	if n := r.failed(); n != 2 {
		t.Errorf("failed = %d, want 2", n)
	}
	var b bytes.Buffer
	if err := r.write(&b, "table"); err != nil || !strings.Contains(b.String(), "X:9      11   ") || !strings.Contains(b.String(), "CGROUP") {
		t.Errorf("report table (%v):\n%s", err, b.String())
	}
}
