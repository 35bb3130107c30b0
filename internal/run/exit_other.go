//go:build !linux && !darwin

package run

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/contain-cli/contain/internal/proc"
)

// ExitBySignal is not written for this OS yet: contain exits with 128+N.
func ExitBySignal(syscall.Signal) error {
	return fmt.Errorf("exit by signal on %s: %w", runtime.GOOS, proc.ErrUnsupported)
}
