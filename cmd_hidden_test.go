package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/stop"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
)

// TestStopCannotSee: a session named that no process this user can see
// carries, whose originator runs hidden (another user's; /proc mounted
// hidepid), is "cannot see", one line on stderr with why, status 1:
// never "nothing to stop". The JSON says it, failed.
func TestStopCannotSee(t *testing.T) {
	const why = "its originator, PID 10, runs as another user, whose processes /proc (mounted hidepid=2) hides from this user"
	f := &fakeSystem{listings: [][]session.Process{{}}}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10", "B:11"}}, false)
	w.Unseen = func(pid int) string {
		if pid == 10 {
			return why
		}
		return ""
	}
	var errOut, out strings.Builder
	st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM, Set: w.Set}, W: w, Stderr: &errOut}}
	done, err := st.Do(context.Background())
	if err != nil || !done {
		t.Fatalf("do: %v %v", done, err)
	}
	if s := st.Find("A:10"); s == nil || s.Outcome != stop.CannotSee || s.Absent || s.Detail != why {
		t.Fatalf("A:10: %+v", s)
	}
	st.report(0).write(&out, "table")
	code := exitCode(st.exit(done))
	want := "contain: stop: cannot see session A:10: " + why + "\ncontain: stop: nothing to stop: no process carries B:11\n"
	if code != 1 || errOut.String() != want || out.Len() != 0 {
		t.Errorf("status %d; stderr %q, want %q; stdout %q", code, errOut.String(), want, out.String())
	}
	out.Reset()
	st.report(0).write(&out, "json")
	var got stopReport
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || len(got.Sessions) != 2 ||
		got.Sessions[0].Result != "cannot see it: "+why || !got.Sessions[0].Failed {
		t.Errorf("json %s: %+v %v", out.String(), got, err)
	}
}

// TestReportHidden: where /proc hides other users' processes, stop and
// wait that match nothing say so in one line after the rest.
func TestReportHidden(t *testing.T) {
	defer func(f func() string) { hiddenHere = f }(hiddenHere)
	hiddenHere = func() string { return "/proc is mounted hidepid=2: other users' processes are hidden from this user" }
	f := &fakeSystem{listings: [][]session.Process{{}}}
	w := fakeWatch(f, watch.Set{Tools: []string{"CI"}}, false)
	w.Scan()
	var errOut strings.Builder
	st := &stopRun{&stop.Run{Rq: stop.Request{Sig: syscall.SIGTERM, Set: w.Set}, W: w, Stderr: &errOut}}
	want := "contain: stop: nothing to stop: no session matches -o CI\n" +
		"contain: /proc is mounted hidepid=2: other users' processes are hidden from this user, so their sessions are not listed\n"
	if code := exitCode(st.exit(true)); code != 1 || errOut.String() != want {
		t.Errorf("status %d; stderr %q, want %q", code, errOut.String(), want)
	}
	var b strings.Builder
	reportHidden(&b, "")
	if b.Len() != 0 {
		t.Errorf("nothing hidden: %q", b.String())
	}
}
