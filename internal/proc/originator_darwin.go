package proc

import "github.com/contain-cli/contain/session"

// PinOriginator reads pid, the originator of a session whose earliest
// process started at notAfter, and checks it for me (macos.go:
// pinOriginator); macOS has no handle that holds a process, so each
// signal re-reads it first.
func PinOriginator(pid int, notAfter uint64, me session.Reaper) (*OriginatorPin, error) {
	return Darwin.pinOriginator(pid, notAfter, me)
}
