//go:build unix

package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownerOf is the uid that owns st.
func ownerOf(st fs.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

func myUID() int { return os.Geteuid() }

// links is st's number of hard links.
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// trusted: st is this user's or root's, so no other user put it there.
func trusted(st fs.FileInfo) bool {
	o := ownerOf(st)
	return o == 0 || o == os.Geteuid()
}

// mayReplace: a rename may replace st in dir. In a sticky directory (/tmp)
// only the owner of the entry or of the directory may, or root.
func mayReplace(dir, st fs.FileInfo) bool {
	me := os.Geteuid()
	return dir.Mode()&fs.ModeSticky == 0 || me == 0 || ownerOf(st) == me || ownerOf(dir) == me
}

// refused: an error of creating or renaming that writing in place may get
// around.
func refused(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// openDevice opens a FIFO or character device for writing: without
// O_CREAT or O_TRUNC, not through a link unless st is the link's target
// (a trusted link), then checked to be what was asked.
func openDevice(path string, st fs.FileInfo) (*os.File, error) {
	flags := unix.O_WRONLY | unix.O_CLOEXEC | unix.O_NOCTTY
	if l, err := os.Lstat(path); err != nil {
		return nil, err
	} else if l.Mode()&fs.ModeSymlink == 0 {
		flags |= unix.O_NOFOLLOW
	} else if !trusted(l) {
		return nil, fmt.Errorf("%s: a symbolic link of uid %d's: not followed", path, ownerOf(l))
	}
	f, err := openFile(path, flags)
	if err != nil {
		return nil, err
	}
	now, err := f.Stat()
	if err == nil && (!deviceOK(now) || now.Mode().Type() != st.Mode().Type()) {
		err = fmt.Errorf("%s: no longer a FIFO or character device of this user's or root's", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openInPlace opens the existing regular file path, as it was found
// (st), and truncates it: opened with O_NOFOLLOW, and checked to be the
// same file, still of one link.
func openInPlace(path string, st fs.FileInfo) (*os.File, error) {
	f, err := openFile(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	now, err := f.Stat()
	if err == nil && (!now.Mode().IsRegular() || !os.SameFile(now, st) || links(now) != 1) {
		err = fmt.Errorf("%s: changed since contain looked at it", path)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openFile opens path with flags, retrying on EINTR (a FIFO's open
// blocks until a reader comes).
func openFile(path string, flags int) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// writeFD writes data to this process's file descriptor fd.
func writeFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: fmt.Sprintf("file descriptor %d", fd), Err: err}
		}
		data = data[n:]
	}
	return nil
}

// fdOpen: fd is an open file descriptor of this process.
func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// renameOpen renames the new file f over path and returns it, still open:
// what is written to it is at path.
func renameOpen(f *os.File, path string) (*os.File, error) {
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}
