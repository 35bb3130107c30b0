//go:build !linux && !darwin

package run

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/contain-cli/contain/internal/proc"
)

// Prepared: only Linux and macOS prepare a crash guard (and the shim)
// before the run. Windows needs none: the job object ends the group when
// contain ends, however it ends; on an OS not written yet Run refuses.
type Prepared struct{}

// Drop drops nothing.
func (p *Prepared) Drop() {}

// ExitBySignal: Windows has no signal a process can end by (a timeout
// ends COMMAND with exit code 1, or by terminating the job), nor has an
// OS not written yet: contain exits with 128+N.
func ExitBySignal(syscall.Signal) error {
	return fmt.Errorf("exit by signal on %s: %w", runtime.GOOS, proc.ErrUnsupported)
}
