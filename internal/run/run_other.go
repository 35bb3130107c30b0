//go:build !linux && !windows && !darwin

package run

import (
	"fmt"
	"runtime"

	"github.com/contain-cli/contain/internal/proc"
)

// Run is not written for this OS. It refuses rather than start COMMAND
// without the guarantees contain promises.
func Run(o Options) (Result, error) {
	return Result{}, fmt.Errorf("run on %s: %w", runtime.GOOS, proc.ErrUnsupported)
}

// PrepareRun does nothing where Run is not written yet.
func PrepareRun() *Prepared { return &Prepared{} }

// PrepareRunInInit is PrepareRun.
func PrepareRunInInit() *Prepared { return PrepareRun() }

// recorderOS and procRef: nothing to add where Run is not written.
type (
	recorderOS struct{}
	procRef    struct{}
)
