package run

import (
	"golang.org/x/sys/unix"
)

// reapWait is wait: on macOS contain reaps COMMAND alone, whose name -v
// has said already; the name is "".
func (r *runner) reapWait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, string, error) {
	pid, err := r.wait(ws, flags, ru)
	return pid, "", err
}
