package run

import (
	"golang.org/x/sys/unix"
)

// reapWait is wait: on macOS contain reaps COMMAND alone, whose name -v
// has said already; the name is "".
func (sys *darwinOS) reapWait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, string, error) {
	pid, err := sys.wait(ws, flags, ru)
	return pid, "", err
}
