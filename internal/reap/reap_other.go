//go:build !linux && !windows && !darwin

package reap

import (
	"fmt"
	"runtime"

	"github.com/contain-cli/contain/internal/proc"
)

// Reap is not written for this OS yet: it kills nothing and says so for
// every target.
func Reap(plan Plan) Report {
	var r Report
	for _, c := range plan.Targets {
		r.Processes = append(r.Processes, Outcome{Process: c.Process, Session: c.Session, Ending: CannotSignal,
			Detail: fmt.Sprintf("reap on %s: %v", runtime.GOOS, proc.ErrUnsupported), Alive: true})
	}
	return r
}

// killName names the end reap would give a process.
const killName = "SIGKILL"
