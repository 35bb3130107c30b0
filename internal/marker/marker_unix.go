//go:build linux || darwin

package marker

import "golang.org/x/sys/unix"

// Fits reports whether this process's limit of open files lets a child
// hold a descriptor at FD (children inherit the limit).
func Fits() bool {
	var lim unix.Rlimit
	return unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && fits(lim.Cur)
}
