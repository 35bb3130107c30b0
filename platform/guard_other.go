//go:build !linux && !darwin

package platform

// DropGuard: only Linux prepares a crash guard before the run.
func DropGuard() {}
