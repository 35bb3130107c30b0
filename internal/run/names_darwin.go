package run

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

// reapWait is wait: on macOS contain reaps COMMAND alone, whose name -v
// has said already; the name is "".
func (r *runner) reapWait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, string, error) {
	pid, err := r.wait(ws, flags, ru)
	return pid, "", err
}

// commOf is pid's name, read now: its executable's, from its arguments;
// "?" when they cannot be read.
func commOf(pid int) string {
	if argv := proc.ArgvOf(pid); len(argv) > 0 && argv[0] != "" {
		return filepath.Base(argv[0])
	}
	return "?"
}
