//go:build !linux && !windows && !darwin

package proc

import (
	"fmt"
	"runtime"

	"github.com/contain-cli/contain/session"
)

// ListTagged is not written for this OS yet (docs/GUIDE.md, macOS: kern.procargs2 on
// macOS, the PEB on Windows).
func ListTagged() (Listing, error) {
	return Listing{}, fmt.Errorf("listing processes on %s: %w", runtime.GOOS, ErrUnsupported)
}

// LookupOriginator is not written for this OS yet.
func LookupOriginator(uint64, int) (session.Originator, error) {
	return session.Originator{}, fmt.Errorf("looking up processes on %s: %w", runtime.GOOS, ErrUnsupported)
}

// Ancestors is not written for this OS yet; nothing is reaped there.
func Ancestors() map[int]bool { return map[int]bool{} }
