package run

import (
	"fmt"
	"syscall"

	"github.com/contain-cli/contain/internal/proc"
)

// The signals that the Go runtime dies of once no one is notified (macOS
// numbers, the same on Linux): HUP, INT, TERM.
const (
	macSIGHUP  = syscall.Signal(1)
	macSIGINT  = syscall.Signal(2)
	macSIGTERM = syscall.Signal(15)
)

// macExitable tells whether contain on macOS can end itself with sig
// (exit_darwin.go): only HUP, INT and TERM, by restoring the disposition
// contain started with (signal.Reset) and raising the signal. One that was
// ignored when contain started (HUP under nohup, INT in a background job
// of a shell without job control) would be restored to ignored, and the
// raise would do nothing but cost the wait for it: x/sys has no raw
// sigaction for macOS to set SIG_DFL instead. nil when it can; otherwise
// why not, and contain exits with 128+N (the caller's fallback).
func macExitable(sig syscall.Signal, ignored bool) error {
	switch {
	case sig != macSIGHUP && sig != macSIGINT && sig != macSIGTERM:
		return fmt.Errorf("only HUP, INT and TERM: %w", proc.ErrUnsupported)
	case ignored:
		return fmt.Errorf("it was ignored when contain started: %w", proc.ErrUnsupported)
	}
	return nil
}
