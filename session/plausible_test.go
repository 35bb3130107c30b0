package session

import (
	"strings"
	"testing"
)

func TestImplausible(t *testing.T) {
	me := Reaper{PID: 500, Ancestors: map[int]bool{400: true, 1: true}, UID: 1000}
	member := func(pid, uid int, start uint64) Process { return Process{PID: pid, UID: uid, Start: start} }
	run := Claimed{PID: 100, UID: 1000, User: "ann", Start: 10, Contain: true, Executable: "/usr/bin/contain"}
	sleep := Claimed{PID: 100, UID: 1000, User: "ann", Start: 10, Executable: "/usr/bin/sleep"}
	root := Claimed{PID: 100, UID: 0, User: "root", Start: 10}
	for _, c := range []struct {
		name    string
		tool    string
		o       Claimed
		members []Process
		want    string // "" or a part of the reason
	}{
		{"a contain run of the same user", "CONTAIN", run, []Process{member(101, 1000, 11), member(102, 1000, 50)}, ""},
		{"the same clock tick", "CONTAIN", run, []Process{member(101, 1000, 10)}, ""},
		{"another tool's originator needs no contain", "CLUD", sleep, []Process{member(101, 1000, 11)}, ""},
		{"no members (daemons only were left out)", "CLUD", sleep, nil, ""},
		{"PID 1", "X", Claimed{PID: 1, Start: 0}, []Process{member(101, 0, 11)}, "PID 1 is never an originator"},
		{"PID 0", "X", Claimed{PID: 0}, nil, "PID 0 is never an originator"},
		{"this contain", "CONTAIN", Claimed{PID: 500, UID: 1000, Contain: true}, nil, "it is this contain"},
		{"an ancestor", "CONTAIN", Claimed{PID: 400, UID: 1000, Contain: true}, []Process{member(101, 1000, 11)}, "an ancestor of this contain"},
		{"root's process named by nobody's tag", "SECTOOL", root, []Process{member(101, 65534, 11)},
			"it belongs to another user (root, uid 0) than the session's PID 101 (uid 65534)"},
		{"every member of another user", "X", sleep, []Process{member(101, 0, 11), member(102, 0, 12)}, "than the session's PID"},
		// Another user's process that carries the value (even an older one
		// that exec'd with it) is no claim and no veto.
		{"another user's member is left out", "X", sleep, []Process{member(101, 1000, 11), member(102, 0, 12)}, ""},
		{"another user's older member is left out", "CONTAIN", run, []Process{member(101, 1000, 11), member(102, 65534, 5)}, ""},
		{"started after a member", "X", sleep, []Process{member(101, 1000, 11), member(102, 1000, 9)}, "it started after the session's PID 102"},
		{"CONTAIN but not a contain run", "CONTAIN", sleep, []Process{member(101, 1000, 11)}, "it is not a contain run (it runs /usr/bin/sleep)"},
		{"CONTAIN, executable unread", "CONTAIN", Claimed{PID: 100, UID: 1000, Start: 10}, nil, "its executable cannot be read"},
		{"the stop itself and its ancestors among the members do not count", "X", sleep,
			[]Process{member(500, 0, 1), member(400, 0, 1), member(101, 1000, 11)}, ""},
	} {
		got := Implausible(c.tool, c.o, c.members, me)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestImplausibleWindows(t *testing.T) {
	me := Reaper{PID: 500, SID: "S-1-5-21-1"}
	o := Claimed{PID: 100, UID: -1, SID: "S-1-5-21-1", User: "ann", Start: 10, Contain: true}
	ok := []Process{{PID: 101, UID: -1, SID: "S-1-5-21-1", Start: 11}}
	if why := Implausible("CONTAIN", o, ok, me); why != "" {
		t.Errorf("same SID: %q", why)
	}
	other := []Process{{PID: 101, UID: -1, SID: "S-1-5-21-2", User: "bob", Start: 11}}
	if why := Implausible("CONTAIN", o, other, me); !strings.Contains(why, "another user (ann) than the session's PID 101 (bob)") {
		t.Errorf("another SID: %q", why)
	}
	unread := []Process{{PID: 101, UID: -1, Start: 11}}
	if why := Implausible("CONTAIN", o, unread, me); !strings.Contains(why, "another user") {
		t.Errorf("a member whose SID is unread: %q", why)
	}
}

func TestNeverOriginator(t *testing.T) {
	me := Reaper{PID: 500, Ancestors: map[int]bool{400: true}}
	for pid, want := range map[int]string{1: "PID 1 is never an originator", -3: "PID -3 is never an originator",
		500: "it is this contain", 400: "it is an ancestor of this contain", 100: ""} {
		if got := NeverOriginator(pid, me); got != want {
			t.Errorf("%d: %q, want %q", pid, got, want)
		}
	}
}
