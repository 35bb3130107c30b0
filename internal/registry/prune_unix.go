//go:build linux || darwin

package registry

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

// PruneRegistries removes this user's registries that name nothing any
// more: their contain run has ended and none of the processes they list
// runs. It returns how many it removed.
func PruneRegistries() (int, error) {
	regs, err := Read()
	n := 0
	for _, r := range regs {
		if Alive(r) || anyLives(r.Members) {
			continue
		}
		dfd, derr := openRegistryDir(r.Dir, false)
		if derr != nil {
			err = errors.Join(err, derr)
			continue
		}
		if uerr := unix.Unlinkat(dfd, r.Name, 0); uerr == nil {
			n++
		} else if uerr != unix.ENOENT {
			err = errors.Join(err, &os.PathError{Op: "remove", Path: filepath.Join(r.Dir, r.Name), Err: uerr})
		}
		unix.Close(dfd)
	}
	return n, err
}

// anyLives reports whether one of ids runs.
func anyLives(ids []proc.ID) bool {
	for _, id := range ids {
		if proc.Lives(id) {
			return true
		}
	}
	return false
}
