//go:build linux || darwin

package proc

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// EndedBy says how a leftover ended: the signal it died of; or, when it
// exited, its status, after the signal contain had sent it if any
// ("SIGTERM, then exited 0": it exited because it was told to); or, when
// neither contain nor its shim reaped it (re-parented out of their
// reach), that its status is unknown.
func EndedBy(sent string, ws unix.WaitStatus, reaped bool) string {
	var how string
	switch {
	case reaped && ws.Signaled():
		return signals.Name(ws.Signal())
	case reaped && ws.Exited():
		how = fmt.Sprintf("exited %d", ws.ExitStatus())
	default:
		how = "ended, status unknown"
	}
	if sent != "" {
		return sent + ", then " + how
	}
	return how
}
