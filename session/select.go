package session

import (
	"cmp"
	"fmt"
	"strconv"
)

// Reaper is who is reaping: what reap must never touch depends on it.
type Reaper struct {
	PID       int          // contain itself
	Ancestors map[int]bool // contain's parent, its parent, ... up to PID 1
	UID       int
	SID       string // on Windows users are told apart by SID, not UID
	Root      bool   // may signal other users' processes (root, an elevated token)
}

// Choice is one process of a selected session and what reap may do to it.
type Choice struct {
	Process
	Session string // the originator value
	Key     string // the session's Key: the value, and its PID namespace where not the viewer's
	Skip    string // why it is left alone; "" if it is to be reaped
}

// SkippedSession is a session the filters named that reap leaves alone.
type SkippedSession struct {
	Value  string
	State  State
	Reason string
}

// Options are reap's choices that widen or narrow the selection.
type Options struct {
	Filter         Filter
	IncludeDaemons bool
}

// Select chooses what reap may signal: the processes of orphaned sessions
// that pass the filter, except daemons (unless included), PID 0 and 1,
// contain itself and its ancestors, other users' processes unless the
// reaper is root, and the originator of a live session, whatever tag it
// carries itself (a shell of an orphaned session that started a session
// of its own). Malformed and alive sessions are never selected; those the
// filters name are returned as skipped, so that reap can say why.
//
// sessions must be every session seen, not only those the filter names:
// the originators of live sessions are found among all of them.
func Select(sessions []Session, o Options, r Reaper) (chosen []Choice, skipped []SkippedSession) {
	f := o.Filter
	f.Orphaned = false
	originates := LiveOriginators(sessions)
	for i := range sessions {
		s := &sessions[i]
		if !f.Match(s) {
			continue
		}
		switch s.State {
		case Orphaned:
		case Daemon:
			if !o.IncludeDaemons {
				skipped = append(skipped, SkippedSession{s.Value, s.State, "every process is a daemon; --include-daemons reaps them"})
				continue
			}
		default:
			skipped = append(skipped, SkippedSession{s.Value, s.State, s.Reason})
			continue
		}
		for _, p := range s.Processes {
			skip := r.skip(p, o.IncludeDaemons)
			if v, ok := originates[p.PID]; ok && skip == "" {
				skip = "the originator of the live session " + v
			}
			chosen = append(chosen, Choice{Process: p, Session: s.Value, Key: s.Key(), Skip: skip})
		}
	}
	return chosen, skipped
}

// LiveOriginators maps the PID of each live session's originator to the
// session's value: processes reap never signals, whatever session they
// are members of. A session counted as alive because its originator could
// not be checked counts too.
func LiveOriginators(sessions []Session) map[int]string {
	out := map[int]string{}
	for i := range sessions {
		s := &sessions[i]
		if s.State != Alive || s.PID <= 0 {
			continue
		}
		// The originator as the viewer sees it: a PID of another
		// namespace names no process here.
		pid := s.HerePID()
		if _, dup := out[pid]; !dup && pid > 0 {
			out[pid] = s.Key()
		}
	}
	return out
}

// skip says why p must be left alone, or "".
func (r Reaper) skip(p Process, includeDaemons bool) string {
	switch {
	case p.PID <= 1:
		return "PID " + strconv.Itoa(p.PID) + " is never signalled"
	case p.PID == r.PID:
		return "contain itself"
	case r.Ancestors[p.PID]:
		return "an ancestor of this contain"
	case r.SID != "" && p.SID != r.SID && !r.Root:
		return fmt.Sprintf("belongs to another user (%s)", cmp.Or(p.User, p.SID, "unknown"))
	case r.SID == "" && p.UID != r.UID && !r.Root:
		return fmt.Sprintf("belongs to another user (uid %d)", p.UID)
	case p.Daemon && !includeDaemons:
		return "a daemon (--include-daemons reaps it)"
	}
	return ""
}
