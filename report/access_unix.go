//go:build unix

package report

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// canWrite asks the kernel whether this process may open the existing
// file path for writing (access(2) with the effective IDs: mode bits,
// ACLs, a read-only file system).
var canWrite = func(path string, _ fs.FileInfo) error {
	return unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS)
}

// canCreateIn asks whether this process may create a file in dir: write
// and search permission on it.
var canCreateIn = func(dir string) error {
	return unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
}
