// Package session groups tagged processes into sessions, decides which are
// alive and which orphaned, and chooses what reap may touch. It is the same
// on every OS: internal/proc finds the processes, this package only
// reasons about them.
package session

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/contain-cli/contain/tag"
)

// State is what a session (or one of its processes) is to ps and reap.
type State string

const (
	// Alive: the originator runs and started no later than the session.
	Alive State = "alive"
	// Orphaned: the originator is gone, a zombie, or its PID was recycled.
	Orphaned State = "orphaned"
	// Daemon: orphaned, but started on purpose to outlive its originator.
	Daemon State = "daemon"
	// Malformed: the tag does not follow the contract; never signalled.
	Malformed State = "malformed"
	// Unknown: the originator is in another PID namespace and cannot be
	// told alive or gone from here. Never orphaned, never reaped, and no
	// veto: its PID is not one of the viewer's.
	Unknown State = "unknown"
)

// Process is one tagged process.
type Process struct {
	PID     int
	PPID    int
	Start   uint64    // start time in the OS's own unit: with PID, its identity
	Started time.Time // the same, as wall-clock time
	UID     int       // -1 on Windows
	SID     string    // the user's SID on Windows, else empty
	User    string
	Argv    []string
	Comm    string
	Value   string // RUNNING_PROCESS_ORIGINATOR as found
	Daemon  bool   // RUNNING_PROCESS_IS_DAEMON=1
	// Registered: found through the registry of the contain run that
	// started it, not by its tag, which its environment may no longer
	// show (written over by its title, unreadable, or cleared); Value is
	// that run's session.
	Registered bool
	// Usage is what the process has used so far, read with the rest.
	Usage Usage
	// NS is the PID namespace its tag was made in, and is judged in,
	// where that is not the viewer's own (0): the tag's PID is a PID of
	// that namespace (Linux: the inode of /proc/PID/ns/pid).
	NS uint64
	// NSUnsure says why the tag may have been made in the viewer's
	// namespace after all (a process here has its PID and could be its
	// originator): the session is then never called orphaned, only
	// unknown.
	NSUnsure string
}

// Usage is a process's CPU time and resident memory, as the OS reports
// them; Known is false where they could not be read, and Why says why.
type Usage struct {
	CPU   time.Duration // user + system, all its threads
	RSS   uint64        // resident set, bytes
	Known bool
	Why   string // why it is not Known, for people
}

// Totals is a session's usage: its processes and the sums of the usage
// of those whose usage is known.
type Totals struct {
	Processes int // its processes, all live: the scans leave zombies out
	CPU       time.Duration
	RSS       uint64 // the sum of the resident sets: shared pages count in each process, as ps shows them
	Unknown   int    // processes whose usage could not be read, not in the sums
}

// Totals sums the usage of s's processes.
func (s *Session) Totals() Totals {
	t := Totals{Processes: len(s.Processes)}
	for _, p := range s.Processes {
		if !p.Usage.Known {
			t.Unknown++
			continue
		}
		t.CPU += p.Usage.CPU
		t.RSS += p.Usage.RSS
	}
	return t
}

// Originator is what a lookup of the session's PID finds now.
type Originator struct {
	Exists bool
	Zombie bool
	Start  uint64 // same unit as Process.Start
	// Owned: its user is known, UID on Unix, SID on Windows.
	Owned bool
	UID   int
	SID   string
	// ViewPID is its PID as the viewer sees it: the PID looked up, in the
	// viewer's own namespace; another where it was looked up in another
	// namespace. 0 when it does not exist.
	ViewPID int
}

// Owns reports whether p runs as o's user (o.Owned: where it is known).
func (o Originator) Owns(p Process) bool { return sameUser(o.UID, o.SID, p) }

// sameUser reports whether p runs as the user of uid (Unix) or sid
// (Windows): the same SID where either has one, else the same uid.
func sameUser(uid int, sid string, p Process) bool {
	if sid != "" || p.SID != "" {
		return sid == p.SID
	}
	return uid == p.UID
}

// Lookup tells what process, if any, a PID of PID namespace ns (0: the
// viewer's own) names now. An error means it could not be told; the
// session then counts as alive (the viewer's namespace) or unknown
// (another), never as orphaned.
type Lookup func(ns uint64, pid int) (Originator, error)

// Session is every process that carries the same originator value.
type Session struct {
	Value     string
	Tool      string // empty when malformed
	PID       int    // the originator's PID; 0 when malformed
	State     State
	Reason    string    // why it has that state, for people
	Processes []Process // earliest first
	// NotAfter is the start its originator must not be later than: the
	// earliest of its processes that run as the originator's user (all
	// of them where that is not known).
	NotAfter uint64
	// Originator is what the lookup of PID found (zero when malformed, or
	// when it could not be told).
	Originator Originator
	// NS is the PID namespace the session's tag was made in and it is
	// judged in (Process.NS); 0: the viewer's own. Two sessions with the
	// same value in two namespaces are two sessions.
	NS uint64
	// ViewPID is the originator's PID as the viewer sees it (PID in the
	// viewer's namespace); 0 when it was not found.
	ViewPID int
}

// HerePID is the originator's PID as the viewer sees it: PID in the
// viewer's own namespace, ViewPID in another; 0 where it was not found
// there. Only this PID may be pinned, signalled or spared.
func (s *Session) HerePID() int {
	if s.NS == 0 {
		return s.PID
	}
	return s.ViewPID
}

// Where names the session's PID namespace where it is not the viewer's,
// and its originator's PID here when it was found: " of PID namespace N
// (PID H here)"; "" in the viewer's own.
func (s *Session) Where() string {
	if s.NS == 0 {
		return ""
	}
	w := " of PID namespace " + strconv.FormatUint(s.NS, 10)
	if s.ViewPID != 0 {
		w += fmt.Sprintf(" (PID %d here)", s.ViewPID)
	}
	return w
}

// Key tells sessions apart: the value, and the namespace where it is not
// the viewer's.
func (s *Session) Key() string { return Key(s.Value, s.NS) }

// Key is the key of the session value in PID namespace ns.
func Key(value string, ns uint64) string {
	if ns == 0 {
		return value
	}
	return value + "@pidns:" + strconv.FormatUint(ns, 10)
}

// Group sorts processes into sessions and decides each session's state: the
// originator is alive only when its PID exists, is not a zombie, and started
// no later than the earliest member (so a recycled PID is not taken for it).
// Sessions come earliest first.
func Group(procs []Process, lookup Lookup) []Session {
	byKey := map[string]*Session{}
	var order []*Session
	for _, p := range procs {
		k := Key(p.Value, p.NS)
		s := byKey[k]
		if s == nil {
			s = &Session{Value: p.Value, NS: p.NS}
			byKey[k] = s
			order = append(order, s)
		}
		s.Processes = append(s.Processes, p)
	}
	out := make([]Session, 0, len(order))
	for _, s := range order {
		slices.SortFunc(s.Processes, func(a, b Process) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.PID, b.PID))
		})
		s.decide(lookup)
		out = append(out, *s)
	}
	slices.SortStableFunc(out, func(a, b Session) int {
		return cmp.Or(cmp.Compare(a.Processes[0].Start, b.Processes[0].Start), cmp.Compare(a.Value, b.Value), cmp.Compare(a.NS, b.NS))
	})
	return out
}

func (s *Session) decide(lookup Lookup) {
	tool, pid, err := tag.Parse(s.Value)
	if err != nil {
		s.State, s.Reason = Malformed, "not TOOL:PID with PID in 1.."+strconv.Itoa(tag.MaxPID)
		return
	}
	s.Tool, s.PID = tool, pid
	o, err := lookup(s.NS, pid)
	// The originator starts no later than the processes it started. Only
	// its own user's are compared: anyone can give a process of their
	// own, even one older than the originator that exec'd since, the
	// value of another user's live session, and that must not make the
	// session look orphaned to a reap run by root. (Where none of the
	// session's processes is its user's, all of them are compared: a
	// PID handed out again to another user's process is then no
	// originator of theirs.)
	earliest := s.Processes[0]
	if err == nil && o.Exists && o.Owned {
		if i := slices.IndexFunc(s.Processes, o.Owns); i >= 0 {
			earliest = s.Processes[i]
		}
	}
	s.NotAfter = earliest.Start
	if err == nil {
		s.Originator = o
		if o.Exists {
			s.ViewPID = cmp.Or(o.ViewPID, pid)
		}
	}
	where := s.Where()
	switch {
	case err != nil && s.NS != 0:
		s.State, s.Reason = Unknown, fmt.Sprintf("cannot tell whether PID %d%s runs (%v)", pid, where, err)
		return
	case err != nil:
		s.State, s.Reason = Alive, fmt.Sprintf("cannot check PID %d (%v): counted as alive", pid, err)
		return
	case !o.Exists:
		s.State, s.Reason = Orphaned, fmt.Sprintf("PID %d%s is gone", pid, where)
	case o.Zombie:
		s.State, s.Reason = Orphaned, fmt.Sprintf("PID %d%s has exited (zombie)", pid, where)
	case o.Start > earliest.Start:
		s.State, s.Reason = Orphaned, fmt.Sprintf("PID %d%s was reused: it started after PID %d of the session", pid, where, earliest.PID)
	default:
		s.State, s.Reason = Alive, fmt.Sprintf("PID %d%s is running", pid, where)
		return
	}
	for _, p := range s.Processes {
		if p.NSUnsure != "" {
			s.State, s.Reason = Unknown, s.Reason+"; but "+p.NSUnsure
			return
		}
	}
	for _, p := range s.Processes {
		if !p.Daemon {
			return
		}
	}
	s.State = Daemon
	s.Reason += "; every process is marked as a daemon"
}

// StateOf is p's own state: an orphaned session's process marked as a
// daemon is a daemon (reap spares it unless asked), otherwise the session's.
func (s *Session) StateOf(p Process) State {
	if s.State == Orphaned && p.Daemon {
		return Daemon
	}
	return s.State
}

// Daemons counts the processes marked as daemons.
func (s *Session) Daemons() int {
	n := 0
	for _, p := range s.Processes {
		if p.Daemon {
			n++
		}
	}
	return n
}

// Filter narrows the sessions ps lists and reap acts on.
type Filter struct {
	Tools    []string // exact TOOL; empty: all
	Values   []string // exact TOOL:PID; empty: all
	Keys     []string // exact Session.Key; empty: all
	Orphaned bool     // only orphaned sessions
}

// Match reports whether s passes the filter.
func (f Filter) Match(s *Session) bool {
	if len(f.Tools) > 0 && !slices.Contains(f.Tools, s.Tool) {
		return false
	}
	if len(f.Values) > 0 && !slices.Contains(f.Values, s.Value) {
		return false
	}
	if len(f.Keys) > 0 && !slices.Contains(f.Keys, s.Key()) {
		return false
	}
	return !f.Orphaned || s.State == Orphaned
}
