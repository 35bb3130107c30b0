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
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
)

// TestStopReport: what stop says of each process and session, whatever
// became of them: asked and ended, killed by --kill, a daemon left
// running, an orphaned session left to reap, one that could not be asked,
// one that no process carries. What it says on stderr (a named session
// orphaned, one that could not be asked, one that matched nothing) is not
// said again on stdout.
func TestStopReport(t *testing.T) {
	daemon := tagged(22, "A:10")
	daemon.Daemon = true
	f := &fakeSystem{running: map[int]uint64{10: 1, 11: 1, 22: 22, 31: 31, 41: 41, 51: 51}}
	f.listings = [][]session.Process{{tagged(20, "A:10"), tagged(21, "A:10"), daemon, tagged(31, "B:11"), tagged(41, "C:12"), tagged(51, "D:13")}}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10", "B:11", "C:12"}, Tools: []string{"D"}}, false)
	if _, err := w.Scan(); err != nil {
		t.Fatal(err)
	}
	st := &stopRun{rq: stopRequest{sig: syscall.SIGTERM, timeout: 5 * time.Second, kill: true}, w: w, killed: true, timedOut: true,
		reaped: map[proc.ID]reap.Outcome{{PID: 21, Start: 21}: {Process: tagged(21, "A:10"), Session: "A:10", Ending: reap.EndedByFirst}}}
	st.sessions = []*stopped{
		{value: "A:10", tool: "A", pid: 10, state: session.Alive, named: true, outcome: asked},
		{value: "B:11", tool: "B", pid: 11, state: session.Orphaned, named: true, outcome: orphaned, detail: "PID 11 is gone"},
		{value: "C:12", tool: "C", pid: 12, state: session.Alive, named: true, outcome: refused, detail: "cannot ask PID 12: operation not permitted"},
		{value: "D:13", tool: "D", pid: 13, state: session.Orphaned, outcome: orphaned, detail: "PID 13 is gone"},
		{value: "E:14", tool: "E", pid: 14, named: true, absent: true, detail: "no process carries it"},
	}
	var b bytes.Buffer
	st.report(time.Second).write(&b, "table")
	want := `SESSION  PID  COMMAND    RESULT
A:10     20   sleep 300  ended
A:10     21   sleep 300  killed with SIGKILL
A:10     22   sleep 300  left running: a daemon (--include-daemons counts it)
B:11     31   sleep 300  left alone: orphaned (contain reap --session B:11)
C:12     41   sleep 300  left alone: its originator could not be asked
D:13     51   sleep 300  left alone: orphaned (contain reap --session D:13)

session A:10: asked PID 10 to stop (SIGTERM); killed after 5s (--kill)
session D:13: left alone: orphaned (PID 13 is gone); contain reap --session D:13 ends it
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}

	var errOut strings.Builder
	st.stderr = &errOut
	err := st.exit(true)
	if code := exitCode(err); code != 1 {
		t.Errorf("status %d, want 1 (C:12 could not be asked, B:11 named and orphaned, E:14 matched nothing)", code)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "contain reap --session B:11") || !strings.Contains(lines[1], "C:12") || lines[2] != "contain: stop: nothing to stop: no process carries E:14" {
		t.Errorf("stderr:\n%s", errOut.String())
	}

	b.Reset()
	st.report(time.Second).write(&b, "json")
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
	for i, failed := range []bool{false, true, true, false, true} {
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
	w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, false)
	w.Scan()
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
	st := &stopRun{w: &watch.Watch{Me: session.Reaper{PID: 500, Root: true}}}
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
	w := fakeWatch(f, watch.Set{Tools: []string{"A", "B"}}, false)
	w.Scan()
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

// TestStopNothingMatched: a session named that no process carries, or -o
// that finds no session, is said once, on stderr, with the count of the
// processes that could not be read (they may carry it), and stop exits 1
// as pkill does; stdout has nothing of it. A named session with only a
// daemon left did match: said, status 0, and the count is not.
func TestStopNothingMatched(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{}}}
	w := fakeWatch(f, watch.Set{Tools: []string{"CI"}}, false)
	w.Scan()
	w.Unreadable = map[string]int{"permission denied": 1}
	const skipped = "contain: skipped 1 process whose environment cannot be read (1: permission denied)\n"
	for _, c := range []struct {
		name     string
		tools    []string
		sessions []*stopped
		stderr   string
		code     int
	}{
		{"named", nil, []*stopped{{value: "NOPE:99999", tool: "NOPE", pid: 99999, named: true, absent: true, detail: "no process carries it"}},
			"contain: stop: nothing to stop: no process carries NOPE:99999\n" + skipped, 1},
		{"-o", []string{"CI"}, nil, "contain: stop: nothing to stop: no session matches -o CI\n" + skipped, 1},
		{"a daemon left", nil, []*stopped{{value: "A:10", tool: "A", pid: 10, state: session.Orphaned, named: true, detail: "1 daemon left running (--include-daemons stops them)"}},
			"contain: stop: nothing to stop in session A:10: no live process; 1 daemon left running (--include-daemons stops them)\n", 0},
	} {
		var errOut, out strings.Builder
		st := &stopRun{rq: stopRequest{sig: syscall.SIGTERM, set: watch.Set{Tools: c.tools}}, w: w, stderr: &errOut, sessions: c.sessions}
		st.report(time.Second).write(&out, "table")
		if code := exitCode(st.exit(true)); code != c.code || errOut.String() != c.stderr || out.Len() != 0 {
			t.Errorf("%s: status %d, want %d; stderr %q, want %q; stdout %q", c.name, code, c.code, errOut.String(), c.stderr, out.String())
		}
	}
}

// TestStopIgnoringOriginator: a session whose originator ignores the
// signal is not asked: one line on stderr as it is found (not again at
// the end, nor on stdout), status 1; the JSON says it, failed.
func TestStopIgnoringOriginator(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{tagged(20, "A:10")}}, running: map[int]uint64{10: 1, 20: 20}}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, false)
	w.Scan()
	var errOut, out strings.Builder
	st := &stopRun{rq: stopRequest{sig: syscall.SIGINT}, w: w, stderr: &errOut,
		sessions: []*stopped{{value: "A:10", tool: "A", pid: 10, state: session.Alive, named: true, outcome: ignoring, detail: "PID 10 ignores SIGINT"}}}
	rep := st.report(time.Second)
	rep.write(&out, "table")
	if code := exitCode(st.exit(true)); code != 1 || errOut.Len() != 0 {
		t.Errorf("status %d, want 1; stderr %q, want nothing more", code, errOut.String())
	}
	want := "SESSION  PID  COMMAND    RESULT\nA:10     20   sleep 300  left alone: its originator ignores SIGINT\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), want)
	}
	if s := rep.Sessions[0]; !s.Failed || s.Result != "left alone: PID 10 ignores SIGINT" {
		t.Errorf("session: %+v", s)
	}
}

// TestStopWaitPIDHint: a bare PID that is a live session's originator
// gets its session as a hint (the TOOL that run uses); one that is not
// gets none. Still status 2, one line.
func TestStopWaitPIDHint(t *testing.T) {
	old := sessionsOf
	defer func() { sessionsOf = old }()
	sessionsOf = func(pid int) []string {
		if pid == 1234 {
			return []string{"CLUD:1234"}
		}
		return nil
	}
	for _, c := range []struct{ cmd, arg, want string }{
		{"stop", "1234", `contain: stop: malformed originator value: "1234" (want a session TOOL:PID; did you mean CLUD:1234?)` + "\n"},
		{"wait", "1234", `contain: wait: malformed originator value: "1234" (want a session TOOL:PID; did you mean CLUD:1234?)` + "\n"},
		{"stop", "1235", `contain: stop: malformed originator value: "1235" (want a session TOOL:PID)` + "\n"},
		{"stop", "01234", `contain: stop: malformed originator value: "01234" (want a session TOOL:PID)` + "\n"},
	} {
		var out, errOut strings.Builder
		if code := runApp([]string{"contain", c.cmd, c.arg}, &out, &errOut); code != 2 || out.Len() != 0 || errOut.String() != c.want {
			t.Errorf("%s %s: status %d, stdout %q, stderr %q; want %q", c.cmd, c.arg, code, out.String(), errOut.String(), c.want)
		}
	}
}
