//go:build linux || darwin

package track

import (
	"errors"
	"io/fs"
	"os"

	"github.com/contain-cli/contain/internal/proc"
)

// TagReader reads processes' tags for the tracker. A tag is a claim any
// process can make of itself: it makes a process a member only when the
// process is also contain's own user's (its real uid is contain's), so
// that no other user's process joins the session by carrying the tag:
// none is counted in its limits, spared, moved or signalled for it. (A
// member that switches users, su or a setuid program, is still found by
// its parentage, process group or cgroup: those no other user can forge.)
func TagReader(value string) func(int) TagRead {
	uid := os.Getuid()
	return func(pid int) TagRead {
		v, ok, err := proc.ReadTag(pid, nil)
		switch {
		case errors.Is(err, fs.ErrPermission):
			return TagOther // another user's: final
		case err != nil:
			return TagUnknown // asked again at the next scan
		case ok && v == value:
			if owner, err := proc.UIDOf(pid); err != nil {
				return TagUnknown
			} else if owner != uid {
				return TagOther
			}
			return TagOurs
		}
		return TagOther
	}
}
