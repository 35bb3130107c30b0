package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/ports"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
)

// TestPrintableEscapesEveryControl: C1 controls (CSI U+009B, NEL U+0085),
// bidi overrides and zero-width characters are escaped as C0 ones are;
// printable Unicode is kept.
func TestPrintableEscapesEveryControl(t *testing.T) {
	for in, want := range map[string]string{
		"\u009b31mred":    `\u009b31mred`,
		"a\u0085b":        `a\u0085b`,
		"\u009d0;x\u009c": `\u009d0;x\u009c`,
		"abc\u202edef":    `abc\u202edef`,
		"zero\u200bwidth": `zero\u200bwidth`,
		"ümlaut 日本":       "ümlaut 日本",
		"bad\xc2utf8":     `bad\xc2utf8`,
	} {
		if got := text.Printable(in); got != want {
			t.Errorf("text.Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// hugeValue is a hostile 64 KB tag.
var hugeValue = "HUGE" + strings.Repeat("A", 64<<10) + ":4242"

// TestTablesShortenHugeValues: one 64 KB tag does not widen every row of
// ps's or reap's table; the JSON keeps it whole.
func TestTablesShortenHugeValues(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 1, 0, time.Local)
	sessions := []session.Session{
		{Value: hugeValue, Tool: hugeValue[:len(hugeValue)-5], PID: 4242, State: session.Orphaned, Reason: "PID 4242 is gone", Processes: []session.Process{
			{PID: 51234, PPID: 1, Started: at, User: "root", Argv: []string{"sleep", "300"}},
		}},
		{Value: "CLUD:4243", Tool: "CLUD", PID: 4243, State: session.Orphaned, Reason: "PID 4243 is gone", Processes: []session.Process{
			{PID: 51235, PPID: 1, Started: at, User: "root", Argv: []string{"sleep", strings.Repeat("x", 64<<10)}},
		}},
	}
	var b bytes.Buffer
	writePsTable(&b, sessions, ports.Reading{})
	for _, line := range strings.Split(b.String(), "\n") {
		// The last column is not padded: only the huge command's own row
		// may be long.
		if !strings.Contains(line, "51235") && len(line) > 200 {
			t.Errorf("ps: a row is %d bytes wide: %.120s...", len(line), line)
		}
	}
	if !regexp.MustCompile(`(?m)^HUGEA+…A+:4242  `).MatchString(b.String()) {
		t.Errorf("ps: the huge tag is not shown shortened, start and end:\n%.500s", b.String())
	}

	var r reapReport
	r.add(reap.Outcome{Process: sessions[0].Processes[0], Session: hugeValue, Ending: reap.EndedByFirst}, false)
	r.add(reap.Outcome{Process: sessions[1].Processes[0], Session: "CLUD:4243", Ending: reap.EndedByFirst}, false)
	r.SkippedSessions = []session.SkippedSession{{Value: hugeValue, State: session.Alive, Reason: "x"}}
	b.Reset()
	if err := r.write(&b, "table"); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > 300 {
			t.Errorf("reap: a row is %d bytes wide: %.120s...", len(line), line)
		}
	}

	b.Reset()
	if err := writeJSON(&b, psJSON{Sessions: jsonSessions(sessions)}); err != nil {
		t.Fatal(err)
	}
	var out psJSON
	if err := json.Unmarshal(b.Bytes(), &out); err != nil || out.Sessions[0].Originator.Value != hugeValue {
		t.Errorf("ps JSON does not keep the huge tag whole (%v)", err)
	}
	if got := out.Sessions[1].Processes[0].Argv[1]; len(got) != 64<<10 {
		t.Errorf("ps JSON shortened an argument to %d bytes", len(got))
	}
}

// TestReapReportAlive (item 12): alive is whether the process runs as the
// report is written; failed is reap's failure, and the exit status counts
// only those.
func TestReapReportAlive(t *testing.T) {
	procs := map[int]session.Originator{
		10: {Exists: true, Start: 100},               // runs
		11: {},                                       // gone
		12: {Exists: true, Zombie: true, Start: 100}, // ended, not waited for
		13: {Exists: true, Start: 200},               // the PID names a newer process
	}
	r := reapReport{lookup: func(_ uint64, pid int) (session.Originator, error) { return procs[pid], nil }}
	p := func(pid int) session.Process { return session.Process{PID: pid, Start: 100} }
	r.add(reap.Outcome{Process: p(10), Session: "X:9", Ending: reap.LeftAlone, Detail: "an ancestor of this contain", Alive: true}, true)
	r.add(reap.Outcome{Process: p(11), Session: "X:9", Ending: reap.EndedByFirst}, false)
	r.add(reap.Outcome{Process: p(12), Session: "X:9", Ending: reap.Killed}, false)
	r.add(reap.Outcome{Process: p(13), Session: "X:9", Ending: reap.LeftAlone, Detail: "PID 13 now names another process (started later)"}, false)
	r.add(reap.Outcome{Process: p(10), Session: "X:9", Ending: reap.CannotSignal, Detail: "cannot send SIGTERM: x", Alive: true}, false)
	want := []struct{ alive, failed bool }{{true, false}, {false, false}, {false, false}, {false, false}, {true, true}}
	for i, w := range want {
		if got := r.Processes[i]; got.Alive != w.alive || got.Failed != w.failed {
			t.Errorf("%s: alive %v, failed %v; want %v, %v", got.Result, got.Alive, got.Failed, w.alive, w.failed)
		}
	}
	if n := r.failed(); n != 1 {
		t.Errorf("failed = %d, want 1", n)
	}

	dry := reapReport{DryRun: true, lookup: r.lookup}
	dry.add(reap.Outcome{Process: p(10), Session: "X:9", Ending: reap.Planned, Detail: "would send SIGTERM", Alive: true}, false)
	if got := dry.Processes[0]; !got.Alive || got.Failed || dry.failed() != 0 {
		t.Errorf("dry run: %+v", got)
	}
}
