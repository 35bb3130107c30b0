package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/session"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"sleep 300":        "sleep 300",
		"ümlaut":           "ümlaut",
		"\x1b]0;pwned\x07": `\x1b]0;pwned\a`,
		"a\nb":             `a\nb`,
		"bad\xffutf8":      `bad\xffutf8`,
		"tab\there":        `tab\there`,
		"RUNNING:1\x7f":    `RUNNING:1\x7f`,
		"":                 "",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPsTable(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 1, 0, time.Local)
	daemon := session.Process{PID: 51240, PPID: 51234, Started: at, User: "root", Argv: []string{"ssh-agent"}, Daemon: true}
	sessions := []session.Session{
		{Value: "CLUD:4242", Tool: "CLUD", PID: 4242, State: session.Orphaned, Reason: "PID 4242 is gone", Processes: []session.Process{
			{PID: 51234, PPID: 1, Started: at, User: "root", Argv: []string{"sleep", "300"}},
			daemon,
		}},
		{Value: "X:abc", State: session.Malformed, Reason: "not TOOL:PID", Processes: []session.Process{
			{PID: 7, PPID: 1, Started: at, User: "nobody", Comm: "kworker"},
		}},
	}
	var b bytes.Buffer
	writePsTable(&b, sessions)
	want := `SESSION    STATE      PROCESSES  WHY
CLUD:4242  orphaned   2          PID 4242 is gone
X:abc      malformed  1          not TOOL:PID

ORIGINATOR  STATE      PID    PPID   STARTED              USER    COMMAND
CLUD:4242   orphaned   51234  1      2026-11-21 10:00:01  root    sleep 300
CLUD:4242   daemon     51240  51234  2026-11-21 10:00:01  root    ssh-agent

X:abc       malformed  7      1      2026-11-21 10:00:01  nobody  [kworker]
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	writePsTable(&b, nil)
	if !strings.Contains(b.String(), "no process carries RUNNING_PROCESS_ORIGINATOR") {
		t.Errorf("empty table: %q", b.String())
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
