//go:build !linux

package proc

// Hidden: only Linux's /proc hides other users' processes by a mount
// option; elsewhere nothing is said.
func Hidden() string { return "" }
