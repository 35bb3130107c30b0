//go:build !linux && !darwin

package events

import (
	"fmt"
	"io"
	"runtime"
)

// checkFD: descriptors are not inherited by number here (Windows passes
// handles): fd:N is refused.
func checkFD(n int) error {
	return fmt.Errorf("fd:%d: %s passes no descriptors by number; give a FILE, or - for stderr", n, runtime.GOOS)
}

// fdWriter is never called: checkFD refuses every descriptor.
func fdWriter(int) io.Writer { return io.Discard }
