package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/session"
)

// TestStopReport: what stop says of each process and session, whatever
// became of them: asked and ended, killed by --kill, a daemon left
// running, an orphaned session left to reap, one that could not be asked,
// one with nothing to stop.
func TestStopReport(t *testing.T) {
	daemon := tagged(22, "A:10")
	daemon.Daemon = true
	f := &fakeSystem{running: map[int]uint64{10: 1, 11: 1, 22: 22, 31: 31, 41: 41, 51: 51}}
	f.listings = [][]session.Process{{tagged(20, "A:10"), tagged(21, "A:10"), daemon, tagged(31, "B:11"), tagged(41, "C:12"), tagged(51, "D:13")}}
	w := fakeWatch(f, sessionSet{values: []string{"A:10", "B:11", "C:12"}, tools: []string{"D"}}, false)
	if _, err := w.scan(); err != nil {
		t.Fatal(err)
	}
	st := &stopRun{rq: stopRequest{sig: syscall.SIGTERM, timeout: 5 * time.Second, kill: true}, w: w, killed: true, timedOut: true,
		reaped: map[proc.ID]reap.Outcome{{PID: 21, Start: 21}: {Process: tagged(21, "A:10"), Session: "A:10", Ending: reap.EndedByFirst}}}
	st.sessions = []*stopped{
		{value: "A:10", tool: "A", pid: 10, state: session.Alive, named: true, outcome: asked},
		{value: "B:11", tool: "B", pid: 11, state: session.Orphaned, named: true, outcome: orphaned, detail: "PID 11 is gone"},
		{value: "C:12", tool: "C", pid: 12, state: session.Alive, named: true, outcome: refused, detail: "cannot ask PID 12: operation not permitted"},
		{value: "D:13", tool: "D", pid: 13, state: session.Orphaned, outcome: orphaned, detail: "PID 13 is gone"},
		{value: "E:14", tool: "E", pid: 14, named: true, detail: "no process carries it"},
	}
	var b bytes.Buffer
	st.report(time.Second).write(&b, "table", st.rq.set)
	want := `SESSION  PID  COMMAND    RESULT
A:10     20   sleep 300  ended
A:10     21   sleep 300  killed with SIGKILL
A:10     22   sleep 300  left running: a daemon (--include-daemons counts it)
B:11     31   sleep 300  left alone: orphaned (contain reap --session B:11)
C:12     41   sleep 300  left alone: its originator could not be asked
D:13     51   sleep 300  left alone: orphaned (contain reap --session D:13)

session A:10: asked PID 10 to stop (SIGTERM); killed after 5s (--kill)
session B:11: left alone: orphaned (PID 11 is gone); contain reap --session B:11 ends it
session C:12: left alone: cannot ask PID 12: operation not permitted
session D:13: left alone: orphaned (PID 13 is gone); contain reap --session D:13 ends it
session E:14: nothing to stop: no live process; no process carries it
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}

	var errOut strings.Builder
	st.stderr = &errOut
	err := st.exit(true)
	if code := exitCode(err); code != 1 {
		t.Errorf("status %d, want 1 (C:12 could not be asked, B:11 named and orphaned)", code)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "contain reap --session B:11") || !strings.Contains(lines[1], "C:12") || !strings.Contains(lines[2], "nothing to stop in session E:14") {
		t.Errorf("stderr:\n%s", errOut.String())
	}

	b.Reset()
	st.report(time.Second).write(&b, "json", st.rq.set)
	var got struct {
		TimedOut bool `json:"timed_out"`
		Killed   bool `json:"killed"`
		Sessions []struct {
			Originator struct{ Value string }
			Failed     bool
		}
		Processes []struct {
			PID    int
			Result string
			Alive  bool
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || !got.TimedOut || !got.Killed || len(got.Sessions) != 5 || len(got.Processes) != 6 {
		t.Fatalf("json %s: %+v %v", b.String(), got, err)
	}
	for i, failed := range []bool{false, true, true, false, false} {
		if got.Sessions[i].Failed != failed {
			t.Errorf("session %s failed %v, want %v", got.Sessions[i].Originator.Value, got.Sessions[i].Failed, failed)
		}
	}
	if p := got.Processes[0]; p.PID != 20 || p.Alive || p.Result != "ended" {
		t.Errorf("process 20: %+v", p)
	}
}

// TestStopExitTimedOut: -t passed without --kill is 124, with one line
// that says what runs; after --kill, what is left makes it 1.
func TestStopExitTimedOut(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{tagged(20, "A:10")}}, running: map[int]uint64{10: 1, 20: 20}}
	w := fakeWatch(f, sessionSet{values: []string{"A:10"}}, false)
	w.scan()
	for _, kill := range []bool{false, true} {
		var errOut strings.Builder
		st := &stopRun{rq: stopRequest{sig: syscall.SIGTERM, timeout: time.Second, kill: kill}, w: w, stderr: &errOut,
			sessions: []*stopped{{value: "A:10", tool: "A", pid: 10, state: session.Alive, named: true, outcome: asked}}}
		code, want := exitCode(st.exit(false)), 124
		if kill {
			want = 1
		}
		if code != want || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), "1 session is still running") {
			t.Errorf("--kill %v: status %d, want %d; stderr %q", kill, code, want, errOut.String())
		}
	}
}

// exitCode is the status runApp gives err.
func exitCode(err error) int {
	var discard strings.Builder
	return runcmd.ExitCode(err, &discard)
}

// TestStopSpareUnclaimed: --kill leaves alone what its sessions' asked
// originators cannot have started (another user's, started before the
// originator) and every process of a session that was not asked.
func TestStopSpareUnclaimed(t *testing.T) {
	st := &stopRun{w: &watch{me: session.Reaper{PID: 500, Root: true}}}
	st.sessions = []*stopped{
		{value: "A:10", tool: "A", pid: 10, outcome: asked, claimed: session.Claimed{PID: 10, UID: 1000, Start: 100}},
		{value: "B:11", tool: "B", pid: 11, outcome: notAsked, detail: "PID 1 is never an originator"},
	}
	p := func(pid, uid int, start uint64, value string) session.Choice {
		return session.Choice{Process: session.Process{PID: pid, UID: uid, Start: start}, Session: value}
	}
	chosen := []session.Choice{
		p(20, 1000, 150, "A:10"), // its own
		p(21, 0, 150, "A:10"),    // root's process, tagged A:10 after it was asked
		p(22, 1000, 50, "A:10"),  // started before the originator
		p(30, 1000, 150, "B:11"), // a session not asked
		{Process: session.Process{PID: 23, UID: 1000, Start: 150}, Session: "A:10", Skip: "a daemon"},
	}
	st.spareUnclaimed(chosen)
	want := map[int]string{20: "", 21: "another user", 22: "started after the session's PID 22", 30: "its session was not asked", 23: "a daemon"}
	for _, ch := range chosen {
		if w := want[ch.PID]; w == "" && ch.Skip != "" || w != "" && !strings.Contains(ch.Skip, w) {
			t.Errorf("PID %d: skip %q, want %q", ch.PID, ch.Skip, w)
		}
	}
}

// TestStopExitNotAsked: a session whose originator is not plausibly its
// own is one line on stderr; it fails a stop that named it, or that asked
// no session; found with -o beside a session that was asked, it does not.
func TestStopExitNotAsked(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{tagged(20, "A:10")}}, running: map[int]uint64{10: 1}}
	w := fakeWatch(f, sessionSet{tools: []string{"A", "B"}}, false)
	w.scan()
	forged := func(named bool) *stopped {
		return &stopped{value: "B:1", tool: "B", pid: 1, state: session.Alive, named: named, outcome: notAsked, detail: "PID 1 is never an originator"}
	}
	for _, c := range []struct {
		name     string
		sessions []*stopped
		want     int
	}{
		{"named", []*stopped{forged(true)}, 1},
		{"-o, nothing asked", []*stopped{forged(false)}, 1},
		{"-o, beside one asked", []*stopped{{value: "A:10", tool: "A", pid: 10, state: session.Alive, outcome: asked}, forged(false)}, 0},
		{"named, beside one asked", []*stopped{{value: "A:10", tool: "A", pid: 10, state: session.Alive, outcome: asked}, forged(true)}, 1},
	} {
		var errOut strings.Builder
		st := &stopRun{rq: stopRequest{sig: syscall.SIGTERM}, w: w, stderr: &errOut, sessions: c.sessions}
		if code := exitCode(st.exit(true)); code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, code, c.want)
		}
		if got := errOut.String(); got != "contain: stop: not asking PID 1 for B:1: PID 1 is never an originator\n" {
			t.Errorf("%s: stderr %q", c.name, got)
		}
		if failed := st.failed(forged(c.sessions[len(c.sessions)-1].named), false); failed != (c.want == 1) {
			t.Errorf("%s: the report's failed %v", c.name, failed)
		}
	}
}
