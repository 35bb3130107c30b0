// Package watch follows the processes of a set of sessions until none is
// left: what contain stop and contain wait wait on, and package
// containment's Wait.
package watch

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/status"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
)

// Set is what stop and wait act on: the sessions named TOOL:PID
// and every session of the tools given with -o.
type Set struct {
	Values []string
	Tools  []string
	// Keys, where given, are the only sessions (Session.Key: a value in
	// one PID namespace): what stop narrows to once it asked them.
	Keys []string
}

func (s Set) Has(sess *session.Session) bool {
	if len(s.Keys) > 0 {
		return slices.Contains(s.Keys, sess.Key())
	}
	return slices.Contains(s.Values, sess.Value) || sess.Tool != "" && slices.Contains(s.Tools, sess.Tool)
}

// Watch follows the processes of a set of sessions for stop and wait:
// every one seen, and which of them still hold the wait.
type Watch struct {
	Set            Set
	IncludeDaemons bool
	Me             session.Reaper
	List           func() (proc.Listing, error)
	Lookup         session.Lookup
	Unseen         func(pid int) string // proc.Unseen: why a session of that originator cannot be seen
	Stderr         io.Writer            // where a registry that could not be read is said, once
	Scans          int
	// unreadable counts, by reason, the processes whose environment the
	// first listing could not read: said (sayUnreadable) only when
	// something asked for matched nothing.
	Unreadable map[string]int

	Members map[proc.ID]*Member // every process of the set seen
	Order   []proc.ID           // in the order seen
	Live    []proc.ID           // those that held the wait when last seen
}

// Member is one process of a watched session.
type Member struct {
	session.Process
	Session string // its session's value
	Key     string // its session's Key (the value, and its PID namespace where not this contain's)
	// spared says why it does not hold the wait ("" if it does): a
	// daemon, this contain, one of its ancestors.
	Spared string
}

// New watches the sessions of set on this machine; stderr, if not nil, is
// told once of registries that could not be read.
func New(set Set, includeDaemons bool, stderr io.Writer) *Watch {
	return &Watch{Set: set, IncludeDaemons: includeDaemons, Me: reap.Me(), List: reap.ListForReap,
		Lookup: proc.LookupOriginator, Unseen: proc.Unseen, Stderr: stderr, Members: map[proc.ID]*Member{}}
}

// spared says why p does not hold stop or wait: a daemon is meant to
// outlive its originator, and a stop run from inside the session it stops
// must not wait for itself.
func (w *Watch) Spared(p session.Process) string {
	switch {
	case p.PID == w.Me.PID:
		return "this contain"
	case w.Me.Ancestors[p.PID]:
		return "an ancestor of this contain"
	case p.Daemon && !w.IncludeDaemons:
		return "a daemon (--include-daemons counts it)"
	}
	return ""
}

// scan lists the tagged processes now and returns the sessions of the
// set, each process recorded; the live ones are those that hold the wait.
func (w *Watch) Scan() ([]session.Session, error) {
	l, err := w.List()
	if err != nil {
		return nil, &status.Error{Code: 1, Err: fmt.Errorf("cannot list processes: %w", err)}
	}
	if w.Scans++; w.Scans == 1 {
		w.Unreadable = l.Unreadable
		if l.Registry != nil && w.Stderr != nil {
			text.Fprintf(w.Stderr, "contain: some registries of contain's sessions cannot be read: %v\n", strings.ReplaceAll(l.Registry.Error(), "\n", "; "))
		}
	}
	var out []session.Session
	w.Live = w.Live[:0]
	for _, s := range session.Group(l.Procs, w.Lookup) {
		if !w.Set.Has(&s) {
			continue
		}
		out = append(out, s)
		for _, p := range s.Processes {
			id := proc.ID{PID: p.PID, Start: p.Start}
			m := w.Members[id]
			if m == nil {
				m = &Member{Process: p, Session: s.Value, Key: s.Key(), Spared: w.Spared(p)}
				if o := s.Originator; m.Spared == "" && s.State == session.Alive && o.Owned && !o.Owns(p) {
					// A tag is a claim anyone can make: another user's
					// process that carries a live session's value is no
					// process of its originator's, and holds neither
					// stop nor wait (else anyone could hold them).
					m.Spared = fmt.Sprintf("another user's process (%s), not its originator's", cmp.Or(p.User, strconv.Itoa(p.UID)))
				}
				w.Members[id] = m
				w.Order = append(w.Order, id)
			}
			if m.Spared == "" {
				w.Live = append(w.Live, id)
			}
		}
	}
	return out, nil
}

// narrow keeps to the sessions keys (Session.Key) from now on.
func (w *Watch) Narrow(keys []string) {
	w.Set = Set{Keys: keys}
	w.Live = slices.DeleteFunc(w.Live, func(id proc.ID) bool { return !slices.Contains(keys, w.Members[id].Key) })
}

// holding counts the processes of the session key (Session.Key) that
// hold the wait as last seen.
func (w *Watch) Holding(key string) int {
	n := 0
	for _, id := range w.Live {
		if w.Members[id].Key == key {
			n++
		}
	}
	return n
}

// runs tells whether p runs now: its PID names a process that is not a
// zombie and started when p did (or that cannot be told).
func (w *Watch) Runs(p session.Process) bool {
	return StillRuns(w.Lookup, p, true)
}

// anyLive reports whether a process that held the wait still runs. It
// checks them in the order seen and stops at the first that runs, so that
// a long wait costs one lookup per check.
func (w *Watch) AnyLive() bool {
	for len(w.Live) > 0 {
		if w.Runs(w.Members[w.Live[0]].Process) {
			return true
		}
		w.Live = w.Live[1:]
	}
	return false
}

// wait returns true once no process of the set holds the wait, nor does
// pending (the originators stop asked) report any; false when deadline
// (zero: none) passes first. The processes seen are checked at once, then
// with a backoff; once none is left, two listings in a row must find none:
// a process that a member started while the first was read, and that the
// first missed, is in the second.
//
// ctx ending ends the wait too: false, and ctx's error.
func (w *Watch) Wait(ctx context.Context, deadline time.Time, pending func() bool) (bool, error) {
	b := proc.NewBackoff()
	began := time.Now()
	for {
		if !w.AnyLive() && (pending == nil || !pending()) {
			empty := 0
			for empty < 2 {
				if _, err := w.Scan(); err != nil {
					return false, err
				}
				if len(w.Live) > 0 {
					break
				}
				empty++
			}
			if empty == 2 {
				return true, nil
			}
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return false, nil
		}
		// Quick at first, then at most a tenth of the time waited so far,
		// up to WaitMost: a long wait costs a few wake-ups a second.
		d := max(b.Next(), min(time.Since(began)/10, WaitMost))
		if !deadline.IsZero() {
			d = min(d, time.Until(deadline))
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// WaitMost is the longest a wait sleeps between two checks.
const WaitMost = 200 * time.Millisecond

// liveIn lists, by session (Session.Key), the processes that still hold
// the wait.
func (w *Watch) LiveIn() map[string][]int {
	out := map[string][]int{}
	for _, id := range w.Order {
		if m := w.Members[id]; m.Spared == "" && w.Runs(m.Process) {
			out[m.Key] = append(out[m.Key], m.PID)
		}
	}
	return out
}

// StillRuns tells whether p runs now: its PID names a process that is not
// a zombie and started when p did; known where that cannot be told.
func StillRuns(lookup session.Lookup, p session.Process, known bool) bool {
	if lookup == nil || p.PID <= 0 {
		return known
	}
	o, err := lookup(0, p.PID)
	if err != nil {
		return known
	}
	return o.Exists && !o.Zombie && (o.Start == 0 || p.Start == 0 || o.Start == p.Start)
}
