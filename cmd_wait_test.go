package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
)

// TestStopWaitUsage: bad input is one line on stderr and status 2, before
// anything is listed or signalled.
func TestStopWaitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"stop"}, {"wait"},
		{"stop", "X"}, {"wait", "X"}, {"stop", "X:0"}, {"stop", "X:-1"}, {"stop", ":12"}, {"stop", "X:4294967296"},
		{"stop", "-o", "bad tool!"}, {"wait", "-o", ""}, {"stop", "-o", "A", "B"},
		{"stop", "-t", "-1", "X:1"}, {"wait", "-t", "soon", "X:1"}, {"stop", "-t", "1x", "X:1"},
		{"stop", "-s", "NOPE", "X:1"}, {"stop", "-s", "0", "X:1"}, {"stop", "-s", "", "X:1"},
		{"stop", "--kill", "X:1"}, {"stop", "--format", "xml", "X:1"}, {"wait", "--format", "yaml", "X:1"},
		{"wait", "--no-such-option", "X:1"}, {"stop", "--", "X:1", "-t5"},
		{"stop", "-o", "CONTAIN:12"}, {"wait", "--orig=a:b"},
	} {
		var out, errOut strings.Builder
		code := runApp(append([]string{"contain"}, args...), &out, &errOut)
		if code != 2 || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), "contain: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// fakeSystem is the process table a watch sees: what each listing
// returns, in turn (the last one again when they run out), and which
// processes run, for the checks between listings: each ends after as many
// lookups as ends says (never when absent).
type fakeSystem struct {
	listings [][]session.Process
	lists    int
	running  map[int]uint64 // PID: start time
	ends     map[int]int
	onList   func(n int) // runs before listing n (from 1)
}

func (f *fakeSystem) list() (proc.Listing, error) {
	f.lists++
	if f.onList != nil {
		f.onList(f.lists)
	}
	i := min(f.lists, len(f.listings)) - 1
	return proc.Listing{Procs: f.listings[i]}, nil
}

func (f *fakeSystem) lookup(_ uint64, pid int) (session.Originator, error) {
	if n, ok := f.ends[pid]; ok {
		if n <= 0 {
			delete(f.running, pid)
		}
		f.ends[pid] = n - 1
	}
	start, ok := f.running[pid]
	return session.Originator{Exists: ok, Start: start}, nil
}

func fakeWatch(f *fakeSystem, set watch.Set, includeDaemons bool) *watch.Watch {
	return &watch.Watch{Set: set, IncludeDaemons: includeDaemons, List: f.list, Lookup: f.lookup, Members: map[proc.ID]*watch.Member{},
		Me: session.Reaper{PID: 500, Ancestors: map[int]bool{400: true, 1: true}}}
}

func tagged(pid int, value string) session.Process {
	return session.Process{PID: pid, PPID: 1, Start: uint64(pid), Value: value, Argv: []string{"sleep", "300"}}
}

// TestWatchSpares: daemons (unless included), contain itself and its
// ancestors never hold stop or wait; other sessions are not watched.
func TestWatchSpares(t *testing.T) {
	daemon := tagged(30, "A:10")
	daemon.Daemon = true
	procs := []session.Process{tagged(20, "A:10"), daemon, tagged(500, "A:10"), tagged(400, "A:10"), tagged(21, "B:11"), tagged(22, "A:12")}
	f := &fakeSystem{listings: [][]session.Process{procs}, running: map[int]uint64{10: 1, 11: 1, 12: 1}}
	for _, c := range []struct {
		include bool
		want    int
	}{{false, 1}, {true, 2}} {
		w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, c.include)
		found, err := w.Scan()
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[0].Value != "A:10" {
			t.Fatalf("watched %+v, want A:10 only", found)
		}
		if got := w.Holding("A:10"); got != c.want {
			t.Errorf("--include-daemons %v: %d processes hold the wait, want %d", c.include, got, c.want)
		}
		for pid, want := range map[int]string{500: "this contain", 400: "an ancestor of this contain", 20: ""} {
			if got := w.Members[proc.ID{PID: pid, Start: uint64(pid)}].Spared; got != want {
				t.Errorf("PID %d spared as %q, want %q", pid, got, want)
			}
		}
	}
	w := fakeWatch(f, watch.Set{Tools: []string{"A"}}, false)
	found, _ := w.Scan()
	if len(found) != 2 || w.Holding("A:12") != 1 {
		t.Errorf("-o A watched %+v", found)
	}
}

// TestWatchFindsWhatMembersStarted: wait does not return while a process
// that a member started before it ended still runs, it checks the
// processes it knows between listings, and it takes two empty listings in
// a row to return.
func TestWatchFindsWhatMembersStarted(t *testing.T) {
	f := &fakeSystem{running: map[int]uint64{10: 1, 20: 20, 21: 21}, ends: map[int]int{20: 3, 21: 5}}
	f.listings = [][]session.Process{{tagged(20, "A:10")}, {tagged(21, "A:10")}, {}}
	f.onList = func(n int) {
		if _, runs := f.running[20]; runs && n > 1 {
			t.Errorf("listing %d while the process seen runs", n)
		}
		if _, runs := f.running[21]; runs && n > 2 {
			t.Errorf("listing %d while the child found runs", n)
		}
	}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, false)
	if _, err := w.Scan(); err != nil {
		t.Fatal(err)
	}
	if done, err := w.Wait(context.Background(), time.Now().Add(10*time.Second), nil); !done || err != nil {
		t.Fatalf("wait: %v %v", done, err)
	}
	if f.lists != 4 {
		t.Errorf("%d listings, want 4: the first, the one that found the child, two empty ones", f.lists)
	}
	if left := w.LiveIn(); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// TestWatchPending: wait holds while pending says so (an originator stop
// asked still runs), even with no process left.
func TestWatchPending(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{}}, running: map[int]uint64{}}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, false)
	calls := 0
	done, _ := w.Wait(context.Background(), time.Now().Add(10*time.Second), func() bool { calls++; return calls < 4 })
	if !done || calls != 4 || f.lists != 2 {
		t.Errorf("done %v after %d checks of pending and %d listings", done, calls, f.lists)
	}
}

// TestWatchDeadline: a session that never ends holds the wait until the
// deadline, not longer, and the report says what runs.
func TestWatchDeadline(t *testing.T) {
	f := &fakeSystem{listings: [][]session.Process{{tagged(20, "A:10")}}, running: map[int]uint64{10: 1, 20: 20}}
	w := fakeWatch(f, watch.Set{Values: []string{"A:10"}}, false)
	w.Scan()
	began := time.Now()
	done, err := w.Wait(context.Background(), began.Add(200*time.Millisecond), nil)
	if took := time.Since(began); done || err != nil || took < 200*time.Millisecond || took > 2*time.Second {
		t.Fatalf("wait: %v %v after %v", done, err, took)
	}
	if f.lists != 1 {
		t.Errorf("%d listings while the process seen ran, want none but the first", f.lists-1)
	}
	if left := w.LiveIn(); !slices.Equal(left["A:10"], []int{20}) {
		t.Errorf("left: %v", left)
	}
}

// TestWaitReport: the table and the JSON say each session's end.
func TestWaitReport(t *testing.T) {
	r := waitReport{TimedOut: true, Sessions: []waitedJSON{}}
	r.add("A:10", "A:10", "A", 10, true, []int{20, 21}, "")
	r.add("B:11", "B:11", "B", 11, true, nil, "")
	r.add("C:12", "C:12", "C", 12, false, nil, "")
	r.add("D:13", "D:13", "D", 13, false, nil, "its originator, PID 13, runs as another user (root, uid 0) whose processes' environments this user cannot read")
	var b bytes.Buffer
	r.write(&b, "table")
	want := "SESSION  RESULT\nA:10     still running: 20 21\nB:11     ended\nC:12     nothing to wait for\n" +
		"D:13     cannot see it: its originator, PID 13, runs as another user (root, uid 0) whose processes' environments this user cannot read\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	r.write(&b, "json")
	var got struct {
		TimedOut bool `json:"timed_out"`
		Sessions []struct {
			Originator struct{ Value string }
			Result     string
			Running    []int
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || !got.TimedOut || len(got.Sessions) != 4 || got.Sessions[1].Running == nil {
		t.Errorf("json %s: %+v %v", b.String(), got, err)
	}
	b.Reset()
	(&waitReport{}).write(&b, "table")
	if b.String() != "" {
		t.Errorf("nothing: %q, want nothing on stdout (stderr says it)", b.String())
	}
}

// TestWaitNothingMatched: wait on a session that no process carries says
// so once, on stderr (and exits 0: nothing to wait for); stdout has
// nothing.
func TestWaitNothingMatched(t *testing.T) {
	r := waitReport{Sessions: []waitedJSON{}}
	r.add("A:10", "A:10", "A", 10, true, nil, "")
	r.add("NOPE:99999", "NOPE:99999", "NOPE", 99999, false, nil, "")
	r.Sessions[1].absent = true
	var b bytes.Buffer
	r.write(&b, "table")
	if want := "SESSION  RESULT\nA:10     ended\n"; b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	r.write(&b, "json")
	if !strings.Contains(b.String(), `"value":"NOPE:99999"`) {
		t.Errorf("json: %s", b.String())
	}
}
