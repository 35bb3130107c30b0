//go:build !linux && !darwin

package proc

import "syscall"

// IgnoresSignal: Windows has no signal dispositions to read (contain stop
// sets an event there, or terminates): ErrNoSignalMask.
func IgnoresSignal(int, syscall.Signal) (bool, error) { return false, ErrNoSignalMask }
