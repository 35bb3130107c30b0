package session

import (
	"cmp"
	"fmt"
	"strconv"
)

// ContainTool is the originator name contain run writes by default: a
// session of that name is believed to be a contain run's only when its
// originator runs contain.
const ContainTool = "CONTAIN"

// Claimed is what contain stop read of the process a live session's
// value names, through the handle that pins it: who runs it, since when,
// and whether it is a contain run.
type Claimed struct {
	PID   int
	UID   int    // -1 on Windows
	SID   string // the user's SID on Windows, else empty
	User  string // its user, for people
	Start uint64 // same unit as Process.Start
	// Contain: it runs contain run (see proc.IsContainRun); Executable
	// is its executable as the OS names it, for people ("" if unread).
	Contain    bool
	Executable string
}

// NeverOriginator says why the process pid is never asked to stop a
// session, whoever runs it: PID 0 and 1, this contain, its ancestors
// (a forged tag could otherwise make a stop end the shell that runs it).
// "" when none of these holds.
func NeverOriginator(pid int, me Reaper) string {
	switch {
	case pid <= 1:
		return "PID " + strconv.Itoa(pid) + " is never an originator"
	case pid == me.PID:
		return "it is this contain"
	case me.Ancestors[pid]:
		return "it is an ancestor of this contain"
	}
	return ""
}

// Implausible says why o is not plausibly the originator of the session
// of tool whose processes are members, so that stop must not ask it; ""
// when it is. A tag is a claim any process makes about itself: nobody can
// tag its own sleep with root's PID. What no other user can forge is
// checked instead: o runs as the same user as the session's processes
// (on Windows, the same SID; a process of another user is left out, as
// no claim on o, and is no veto either: otherwise anyone could keep
// root's stop from asking a session by tagging a process of their own
// with its value), started no later than each of its own user's (a
// process never starts before its originator; the same clock tick is
// allowed), is not NeverOriginator, and, for ContainTool, is a contain
// run. This contain and its ancestors among the members do not count:
// a stop run from inside a session is no claim on its originator.
func Implausible(tool string, o Claimed, members []Process, me Reaper) string {
	if why := NeverOriginator(o.PID, me); why != "" {
		return why
	}
	// A process of another user than o's is no claim on o: anyone can tag
	// their own process with any session's value, so it is left out here
	// (and never signalled for o's session); only when every process of
	// the session is another user's is o not the originator.
	considered, own := 0, 0
	var other Process
	for _, p := range members {
		if p.PID == me.PID || me.Ancestors[p.PID] {
			continue
		}
		considered++
		if !sameUser(o.UID, o.SID, p) {
			other = p
			continue
		}
		own++
		if o.Start > p.Start {
			return fmt.Sprintf("it started after the session's PID %d", p.PID)
		}
	}
	if considered > 0 && own == 0 {
		if o.SID != "" || other.SID != "" {
			return fmt.Sprintf("it belongs to another user (%s) than the session's PID %d (%s)",
				cmp.Or(o.User, o.SID, "unknown"), other.PID, cmp.Or(other.User, other.SID, "unknown"))
		}
		return fmt.Sprintf("it belongs to another user (%s) than the session's PID %d (%s)",
			UserWords(o.User, o.UID), other.PID, UserWords(other.User, other.UID))
	}
	if tool == ContainTool && !o.Contain {
		what := "its executable cannot be read"
		if o.Executable != "" {
			what = "it runs " + o.Executable
		}
		return fmt.Sprintf("it is not a contain run (%s), and %s sessions are contain runs'", what, ContainTool)
	}
	return ""
}

// UserWords names a Unix user for people: its name and uid ("uid N"
// alone when the name is unknown).
func UserWords(name string, uid int) string {
	if name == "" || name == strconv.Itoa(uid) {
		return "uid " + strconv.Itoa(uid)
	}
	return fmt.Sprintf("%s, uid %d", name, uid)
}
