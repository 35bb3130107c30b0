package track

import (
	"slices"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// holders is the PIDs of the processes that hold s's marker now, in PID
// order.
func (s *macSession) holders() []int {
	var pids []int
	for _, t := range s.k.tables() {
		if s.mark.HeldIn(t.pipes) {
			pids = append(pids, t.id.PID)
		}
	}
	slices.Sort(pids)
	return pids
}

// TestMarkerDaemons: every process COMMAND started holds the marker
// through fork, exec, setsid and re-parenting (redis, nginx, a double
// fork, env -i), and no other process does, contain included (it holds
// the other end).
func TestMarkerDaemons(t *testing.T) {
	s := newMacSession(t, macOS13)
	k := s.k
	// redis: fork, the parent exits, the child goes on (title, setsid).
	r := k.fork(s.cmd)
	k.exec(r)
	redis := k.fork(r)
	k.exitReaped(r)
	// nginx: fork, the parent exits, the master forks workers.
	n := k.fork(s.cmd)
	k.exec(n)
	master := k.fork(n)
	k.exitReaped(n)
	w1, w2 := k.fork(master), k.fork(master)
	// sh -c '( cmd & ) &', unseen by any scan.
	sub := k.fork(s.cmd)
	dbl := k.fork(sub)
	k.exitReaped(sub)
	k.exec(dbl)
	// env -i: the tag is gone, not the descriptor.
	env := k.fork(s.cmd)
	k.execClean(env)

	want := []int{s.cmd, redis, master, w1, w2, dbl, env}
	slices.Sort(want)
	if got := s.holders(); !slices.Equal(got, want) {
		t.Errorf("holders %v, want %v", got, want)
	}
}

// TestMarkerClosed: a process that closes every descriptor it does not
// know drops the marker; lineage still finds what it forks once a member
// (found by the marker, then given to Lineage) is known.
func TestMarkerClosed(t *testing.T) {
	s := newMacSession(t, macOS13)
	k := s.k
	sub := k.fork(s.cmd) // a double fork no scan saw
	d := k.fork(sub)
	k.exitReaped(sub)
	if got := s.scan(); len(got) != 0 {
		t.Fatalf("lineage found %v through a parent it never saw", got)
	}
	if got := s.holders(); !slices.Equal(got, []int{s.cmd, d}) {
		t.Fatalf("holders %v, want [%d %d]", got, s.cmd, d)
	}
	s.lin.Add(k.ids(d)) // the tracker takes the marker's finds as members
	k.closeAll(d)       // a daemon's close-all
	child := k.fork(d)
	if got := s.holders(); !slices.Equal(got, []int{s.cmd}) {
		t.Errorf("holders after the close-all %v, want only COMMAND (%d)", got, s.cmd)
	}
	if got := s.scan(); !slices.Equal(got, []int{child}) {
		t.Errorf("lineage found %v, want the closer's child %d", got, child)
	}
}

// TestMarkerPair: the marker is the pair of handles, not the held end's
// alone. A handle is the hash of a kernel address, handed out again once
// the end is freed; contain keeps the other end, whose address no new
// pipe can have.
func TestMarkerPair(t *testing.T) {
	m := Marker{Held: 0x1000, Kept: 0x1080}
	for _, c := range []struct {
		name  string
		pipes []proc.MacPipe
		held  bool
	}{
		{"the held end", []proc.MacPipe{{FD: 255, Handle: 0x1000, Peer: 0x1080}}, true},
		{"among other pipes", []proc.MacPipe{{FD: 3, Handle: 0x2000, Peer: 0x2080}, {FD: 9, Handle: 0x1000, Peer: 0x1080}}, true},
		{"contain's end", []proc.MacPipe{{FD: 4, Handle: 0x1080, Peer: 0x1000}}, false},
		{"a new pipe at a freed end's address", []proc.MacPipe{{FD: 3, Handle: 0x1000, Peer: 0x3080}}, false},
		{"a new pipe's other end there", []proc.MacPipe{{FD: 3, Handle: 0x3080, Peer: 0x1000}}, false},
		{"the held end once contain's is closed", []proc.MacPipe{{FD: 255, Handle: 0x1000, Peer: 0}}, false},
		{"no pipes", nil, false},
	} {
		if got := m.HeldIn(c.pipes); got != c.held {
			t.Errorf("%s: HeldIn = %v, want %v", c.name, got, c.held)
		}
	}
	// A marker not read (zero handles) names no one, not even the ends
	// that show a closed peer.
	for _, z := range []Marker{{}, {Held: 0x1000}, {Kept: 0x1080}} {
		if z.HeldIn([]proc.MacPipe{{Handle: 0x1000, Peer: 0}, {Handle: 0, Peer: 0x1080}, {}}) {
			t.Errorf("%+v: HeldIn took an end", z)
		}
	}
}
