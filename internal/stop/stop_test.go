package stop

import (
	"context"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
)

// TestStopSpareUnclaimed: --kill leaves alone what its sessions' asked
// originators cannot have started (another user's, started before the
// originator) and every process of a session that was not asked: also
// one of the same value in another PID namespace (a container's A:10,
// whose originator was not asked).
func TestStopSpareUnclaimed(t *testing.T) {
	st := &Run{W: &watch.Watch{Me: session.Reaper{PID: 500, Root: true}}}
	st.Sessions = []*Stopped{
		{Value: "A:10", Key: "A:10", Tool: "A", PID: 10, Outcome: Asked, Claimed: session.Claimed{PID: 10, UID: 1000, Start: 100}},
		{Value: "B:11", Key: "B:11", Tool: "B", PID: 11, Outcome: NotAsked, Detail: "PID 1 is never an originator"},
		{Value: "A:10", Key: "A:10@pidns:7", Tool: "A", PID: 10, Outcome: NotAsked, Detail: "it belongs to another user"},
	}
	p := func(pid, uid int, start uint64, value string) session.Choice {
		key := value
		value, _, _ = strings.Cut(value, "@")
		return session.Choice{Process: session.Process{PID: pid, UID: uid, Start: start}, Session: value, Key: key}
	}
	chosen := []session.Choice{
		p(20, 1000, 150, "A:10"), // its own
		p(21, 0, 150, "A:10"),    // root's process, tagged A:10 after it was asked
		p(22, 1000, 50, "A:10"),  // started before the originator
		p(30, 1000, 150, "B:11"), // a session not asked
		{Process: session.Process{PID: 23, UID: 1000, Start: 150}, Session: "A:10", Key: "A:10", Skip: "a daemon"},
		p(40, 1000, 150, "A:10@pidns:7"), // the same value in another namespace, not asked
	}
	st.spareUnclaimed(chosen)
	want := map[int]string{20: "", 21: "another user", 22: "started after the session's PID 22", 30: "its session was not asked", 23: "a daemon", 40: "its session was not asked"}
	for _, ch := range chosen {
		if w := want[ch.PID]; w == "" && ch.Skip != "" || w != "" && !strings.Contains(ch.Skip, w) {
			t.Errorf("PID %d: skip %q, want %q", ch.PID, ch.Skip, w)
		}
	}
}

// TestStopUnseenNeverOriginator: a named session no process carries,
// whose originator stop would never ask (PID 1, this contain, an
// ancestor), is nothing to stop, never "cannot see": as root where PID 1
// cannot be read (a VM's or a sandbox's init), stop NOPE:1 said it could
// not see the session.
func TestStopUnseenNeverOriginator(t *testing.T) {
	w := &watch.Watch{Me: session.Reaper{PID: 500, Ancestors: map[int]bool{400: true}},
		List:   func() (proc.Listing, error) { return proc.Listing{}, nil },
		Unseen: func(pid int) string { return "its environment cannot be read" }}
	w.Set.Values = []string{"NOPE:1", "NOPE:400", "NOPE:500", "NOPE:10"}
	st := &Run{Rq: Request{Set: w.Set}, W: w}
	if _, err := st.Do(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, v := range w.Set.Values {
		s := st.Find(v)
		if want := v == "NOPE:10"; s == nil || (s.Outcome == CannotSee) != want || s.Absent == want {
			t.Errorf("%s: %+v, want cannot see %v", v, s, want)
		}
	}
}
