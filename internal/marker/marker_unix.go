//go:build linux || darwin

package marker

import "golang.org/x/sys/unix"

// inherited reports whether descriptor fd is open here without
// close-on-exec: one this process inherited, which its children inherit
// too.
func inherited(fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil && flags&unix.FD_CLOEXEC == 0
}

// inUse reports whether descriptor fd is open here.
func inUse(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// Fits reports whether this process's limit of open files lets a child
// hold a descriptor at FD (children inherit the limit).
func Fits() bool {
	var lim unix.Rlimit
	return unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && fits(lim.Cur)
}

// Files is the descriptor table of a child started with Go's
// syscall.ForkExec: stdin, stdout and stderr, what this process inherited
// open at its number (systemd's sockets, make's jobserver, a 5>log), w at
// FD, and every other number below FD closed in the child (this process's
// own descriptors are close-on-exec: they would go at the exec anyway).
func Files(w int) []uintptr {
	files := make([]uintptr, FD+1)
	for i := range files {
		files[i] = ^uintptr(0)
		if i < 3 || inherited(i) {
			files[i] = uintptr(i)
		}
	}
	files[FD] = uintptr(w)
	return files
}

// Free reports whether FD is free here: nothing this process inherited
// or opened is there.
func Free() bool { return !inUse(FD) }
