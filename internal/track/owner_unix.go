//go:build linux || darwin

package track

import (
	"os"

	"github.com/contain-cli/contain/internal/proc"
)

// ownUser is the tracker's Owner: whether a process's real uid is
// contain's. A process that cannot be read (gone, hidden) is not.
func ownUser() func(int) bool {
	uid := os.Getuid()
	return func(pid int) bool {
		owner, err := proc.UIDOf(pid)
		return err == nil && owner == uid
	}
}
