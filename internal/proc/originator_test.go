//go:build linux || darwin || windows

package proc

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/contain-cli/contain/session"
)

// TestOriginatorCheck: what makes a process the originator that stop may
// ask, on every OS.
func TestOriginatorCheck(t *testing.T) {
	user := session.Reaper{UID: 1000}
	winUser := session.Reaper{UID: -1, SID: "S-1-5-21-1"}
	alive := session.Originator{Exists: true, Start: 100}
	for _, c := range []struct {
		name     string
		now      session.Originator
		notAfter uint64
		uid      int
		sid      string
		me       session.Reaper
		want     error  // errors.Is
		msg      string // else a message with this, or nil when ""
	}{
		{name: "the user's own", now: alive, notAfter: 100, uid: 1000, me: user},
		{name: "started before the session", now: alive, notAfter: 500, uid: 1000, me: user},
		{name: "gone", now: session.Originator{}, notAfter: 500, uid: 1000, me: user, want: ErrGone},
		{name: "a zombie", now: session.Originator{Exists: true, Zombie: true, Start: 100}, notAfter: 500, uid: 1000, me: user, want: ErrGone},
		{name: "a reused PID", now: alive, notAfter: 99, uid: 1000, me: user, want: ErrIdentity},
		{name: "another user's", now: alive, notAfter: 100, uid: 0, me: user, msg: "belongs to another user (uid 0)"},
		{name: "root may", now: alive, notAfter: 100, uid: 0, me: session.Reaper{UID: 0, Root: true}},
		{name: "a reused PID, even for root", now: alive, notAfter: 1, uid: 0, me: session.Reaper{Root: true}, want: ErrIdentity},
		{name: "the same SID", now: alive, notAfter: 100, sid: "S-1-5-21-1", me: winUser},
		{name: "another SID", now: alive, notAfter: 100, sid: "S-1-5-18", me: winUser, msg: "another user (S-1-5-18)"},
		{name: "an owner that cannot be read", now: alive, notAfter: 100, me: winUser, msg: "another user (unknown)"},
		{name: "elevated", now: alive, notAfter: 100, sid: "S-1-5-18", me: session.Reaper{SID: "S-1-5-21-1", Root: true}},
	} {
		err := originatorCheck(c.now, c.notAfter, c.uid, c.sid, "", c.me)
		switch {
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		case c.want == nil && c.msg == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)):
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
}

// TestMacPinOriginator: on macOS the originator is read, checked, and
// read again immediately before the kill (its start time, then its unique
// ID); one whose PID was reused between the two is not signalled.
func TestMacPinOriginator(t *testing.T) {
	f := newFakeMac(MacProc{PID: 90, Start: 1000, RUID: 501}, MacProc{PID: 91, Start: 5000, RUID: 501}, MacProc{PID: 92, Start: 10, RUID: 0})
	m := f.sys()
	me := session.Reaper{UID: 501}
	if _, err := m.pinOriginator(91, 2000, me); !errors.Is(err, ErrIdentity) {
		t.Errorf("started after the session: %v", err)
	}
	if _, err := m.pinOriginator(92, 2000, me); err == nil || !strings.Contains(err.Error(), "another user (u0)") {
		t.Errorf("root's: %v", err)
	}
	if _, err := m.pinOriginator(93, 2000, me); !errors.Is(err, ErrGone) {
		t.Errorf("no such process: %v", err)
	}
	o, err := m.pinOriginator(90, 2000, me)
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	// (Ask on macOS: the pin's Signal. On Windows Ask is the stop event.)
	if err := o.pin.Signal(15); err != nil {
		t.Fatal(err)
	}
	if want := []string{"one 90", "uid 90", "kill 90 15"}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}
	// The PID now names a later process: nothing is sent, and the
	// originator counts as ended.
	f.procs[90] = MacProc{PID: 90, Start: 3000, RUID: 501}
	f.calls = nil
	if err := o.Kill(); !errors.Is(err, ErrGone) {
		t.Errorf("kill after reuse: %v", err)
	}
	if len(f.kills()) != 0 {
		t.Errorf("signalled a reused PID: %q", f.calls)
	}
	if !m.Ended(90, o.Start) {
		t.Error("a reused PID does not count as the originator's end")
	}
}
