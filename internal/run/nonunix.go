//go:build !linux && !darwin

package run

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/contain-cli/contain/internal/proc"
)

// Prepared: only Linux and macOS prepare a crash guard before the run.
type Prepared struct{}

// Drop drops nothing.
func (p *Prepared) Drop() {}

// ExitBySignal is not written for this OS yet: contain exits with 128+N.
func ExitBySignal(syscall.Signal) error {
	return fmt.Errorf("exit by signal on %s: %w", runtime.GOOS, proc.ErrUnsupported)
}
