//go:build !linux && !darwin && !windows

package proc

// CommOf: no way is written to read a process's name on this OS.
func CommOf(int) string { return "?" }
