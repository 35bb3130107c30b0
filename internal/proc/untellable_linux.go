package proc

import (
	"errors"
	"os"

	"github.com/contain-cli/contain/internal/procfs"
)

// EnvUntellable says why pid's environment cannot tell which session it
// is in: written over by a process title, cleared, or unreadable
// (undumpable, another user's); "" when it can be read as an environment
// that has something in it.
func EnvUntellable(pid int) string {
	env, err := FS.Environ(pid, nil)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		if errors.Is(err, os.ErrPermission) {
			return "its environment cannot be read (permission denied)"
		}
		return "its environment cannot be read (" + err.Error() + ")"
	case procfs.Overwritten(env):
		return "its environment is written over by its process title"
	case len(env) == 0:
		return "its environment is empty (cleared, as env -i does)"
	}
	return ""
}
