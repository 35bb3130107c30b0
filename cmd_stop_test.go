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
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/stop"
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
	st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM, Timeout: 5 * time.Second, Kill: true}, W: w, Killed: true, TimedOut: true,
		Reaped: map[proc.ID]reap.Outcome{{PID: 21, Start: 21}: {Process: tagged(21, "A:10"), Session: "A:10", Ending: reap.EndedByFirst}}}}
	st.Sessions = []*stop.Stopped{
		{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Alive, Named: true, Outcome: stop.Asked},
		{Value: "B:11", Key: "B:11", Tool: "B", PID: 11, State: session.Orphaned, Named: true, Outcome: stop.Orphaned, Detail: "PID 11 is gone"},
		{Value: "C:12", Key: "C:12", Tool: "C", PID: 12, State: session.Alive, Named: true, Outcome: stop.Refused, Detail: "cannot ask PID 12: operation not permitted"},
		{Value: "D:13", Key: "D:13", Tool: "D", PID: 13, State: session.Orphaned, Outcome: stop.Orphaned, Detail: "PID 13 is gone"},
		{Value: "E:14", Key: "E:14", Tool: "E", PID: 14, Named: true, Absent: true, Detail: "no process carries it"},
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
	st.Stderr = &errOut
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
		st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM, Timeout: time.Second, Kill: kill}, W: w, Stderr: &errOut,
			Sessions: []*stop.Stopped{{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Alive, Named: true, Outcome: stop.Asked}}}}
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
	return status.Of(err, &discard)
}

// TestStopExitNotAsked: a session whose originator is not plausibly its
// own is one line on stderr; it fails a stop that named it, or that asked
// no session; found with -o beside a session that was asked, it does not.
func TestStopExitNotAsked(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{tagged(20, "A:10")}}, running: map[int]uint64{10: 1}}
	w := fakeWatch(f, watch.Set{Tools: []string{"A", "B"}}, false)
	w.Scan()
	forged := func(named bool) *stop.Stopped {
		return &stop.Stopped{Value: "B:1", Tool: "B", PID: 1, State: session.Alive, Named: named, Outcome: stop.NotAsked, Detail: "PID 1 is never an originator"}
	}
	for _, c := range []struct {
		name     string
		sessions []*stop.Stopped
		want     int
	}{
		{"named", []*stop.Stopped{forged(true)}, 1},
		{"-o, nothing asked", []*stop.Stopped{forged(false)}, 1},
		{"-o, beside one asked", []*stop.Stopped{{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Alive, Outcome: stop.Asked}, forged(false)}, 0},
		{"named, beside one asked", []*stop.Stopped{{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Alive, Outcome: stop.Asked}, forged(true)}, 1},
	} {
		var errOut strings.Builder
		st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM}, W: w, Stderr: &errOut, Sessions: c.sessions}}
		if code := exitCode(st.exit(true)); code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, code, c.want)
		}
		if got := errOut.String(); got != "contain: stop: not asking PID 1 for B:1: PID 1 is never an originator\n" {
			t.Errorf("%s: stderr %q", c.name, got)
		}
		if failed := st.failed(forged(c.sessions[len(c.sessions)-1].Named), false); failed != (c.want == 1) {
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
		sessions []*stop.Stopped
		stderr   string
		code     int
	}{
		{"named", nil, []*stop.Stopped{{Value: "NOPE:99999", Tool: "NOPE", PID: 99999, Named: true, Absent: true, Detail: "no process carries it"}},
			"contain: stop: nothing to stop: no process carries NOPE:99999\n" + skipped, 1},
		{"-o", []string{"CI"}, nil, "contain: stop: nothing to stop: no session matches -o CI\n" + skipped, 1},
		{"a daemon left", nil, []*stop.Stopped{{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Orphaned, Named: true, Detail: "1 daemon left running (--include-daemons stops them)"}},
			"contain: stop: nothing to stop in session A:10: no live process; 1 daemon left running (--include-daemons stops them)\n", 0},
	} {
		var errOut, out strings.Builder
		st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM, Set: watch.Set{Tools: c.tools}}, W: w, Stderr: &errOut, Sessions: c.sessions}}
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
	st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGINT}, W: w, Stderr: &errOut,
		Sessions: []*stop.Stopped{{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, State: session.Alive, Named: true, Outcome: stop.Ignoring, Detail: "PID 10 ignores SIGINT"}}}}
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
