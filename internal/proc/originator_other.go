//go:build !linux && !darwin && !windows

package proc

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/contain-cli/contain/session"
)

// OriginatorPin is not written for this OS: no process can be pinned.
type OriginatorPin struct {
	PID   int
	Start uint64
}

// PinOriginator is not written for this OS yet.
func PinOriginator(int, uint64, session.Reaper) (*OriginatorPin, error) {
	return nil, fmt.Errorf("pinning a process on %s: %w", runtime.GOOS, ErrUnsupported)
}

func (o *OriginatorPin) Ask(syscall.Signal) error { return ErrUnsupported }
func (o *OriginatorPin) Kill() error              { return ErrUnsupported }
func (o *OriginatorPin) Exited() bool             { return true }
func (o *OriginatorPin) Close()                   {}

// Claimed is what was read of the originator: its PID and start time.
func (o *OriginatorPin) Claimed() session.Claimed {
	return session.Claimed{PID: o.PID, UID: -1, Start: o.Start}
}

// Unseen: nothing can be told on this OS.
func Unseen(int) string { return "" }
