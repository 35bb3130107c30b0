package proc

import (
	"os"

	"github.com/contain-cli/contain/session"
)

// PinOriginator reads pid, the originator of a session whose earliest
// process started at notAfter, and checks it for me (macos.go:
// pinOriginator); macOS has no handle that holds a process, so each
// signal re-reads it first.
func PinOriginator(pid int, notAfter uint64, me session.Reaper) (*OriginatorPin, error) {
	return Darwin.pinOriginator(pid, notAfter, me)
}

// Unseen says why this user cannot see the session whose originator is
// pid: pid is a live process whose environment kern.procargs2 does not
// give (another user's, unless root; or hidden by macOS). "" when pid
// names no live process, or its environment can be read.
func Unseen(pid int) string {
	p, found, err := Darwin.Lookup(pid)
	if err != nil || !found || p.Zombie() {
		return ""
	}
	_, _, err = Darwin.readTag(pid)
	if err == nil || Darwin.Ended(pid, p.Start) {
		return ""
	}
	owner := ""
	if p.RUID != os.Getuid() {
		owner = session.UserWords(Darwin.User(p.RUID), p.RUID)
	}
	return unseenWhy(pid, owner, err)
}
