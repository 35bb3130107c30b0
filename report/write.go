package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// How the report reaches its path. A symbolic link at the path is never
// written through: it is replaced, by rename, as a regular file is. The
// exceptions are what cannot be replaced and is not truncated by a write:
//
//   - a FIFO or a character device at the path (not through a link), a
//     FIFO only of this user's or root's (another user's could hold the run
//     or read the report): opened with O_NOFOLLOW, without O_CREAT or
//     O_TRUNC, and written;
//   - a symbolic link of this user's or root's (so not one another user
//     planted) to a FIFO or character device as above: /dev/stderr,
//     /dev/tty; opened, then checked (fstat) to be one still;
//   - on Linux /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N:
//     written to contain's file descriptor N itself, whatever it is (a
//     file a shell redirected 2> to is appended to at its offset, not
//     truncated);
//   - an existing regular file of one link (not a link) in a directory
//     where this user may not create a file (or, in a sticky directory,
//     not replace another user's): opened with O_NOFOLLOW and truncated,
//     as before, since there is no other way to write it.
type how int

const (
	howReplace how = iota // a new file beside the path, renamed over it
	howDevice             // a FIFO or character device, opened and written
	howFD                 // contain's own file descriptor
	howInPlace            // an existing regular file, truncated and written
)

// writeMode is the mode of a new report, less the umask: the user's to
// write, everyone's to read, as a shell's > or os.WriteFile makes it. A
// report that replaces a regular file of this user's keeps that file's
// permissions (chmod 600 stays 600).
const writeMode = 0o644

// plan decides how path is written; check asks the kernel whether it can
// be (CheckPath's question), without touching anything. noun names what
// is written there, in its errors ("report").
func plan(path string, check bool, noun string) (how, fs.FileInfo, error) {
	if fd, ok := fdPath(path); ok {
		if check && !fdOpen(fd) {
			return 0, nil, fmt.Errorf("the %s path %s names file descriptor %d, which is not open", noun, path, fd)
		}
		return howFD, nil, nil
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("the %s's directory: %v", noun, err)
	}
	if !dst.IsDir() {
		return 0, nil, fmt.Errorf("the %s's directory %s is not a directory", noun, dir)
	}
	replace := func(st fs.FileInfo) (how, fs.FileInfo, error) {
		if !check {
			return howReplace, st, nil
		}
		if err := canCreateIn(dir); err != nil {
			return 0, nil, fmt.Errorf("cannot create %s in %s: %v", filepath.Base(path), dir, err)
		}
		if st != nil && !mayReplace(dst, st) {
			return 0, nil, fmt.Errorf("the %s path %s is %s of uid %d's in a sticky directory: contain neither writes through it nor may replace it", noun, path, kindOf(st), ownerOf(st))
		}
		return howReplace, st, nil
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return replace(nil)
	case err != nil:
		return 0, nil, fmt.Errorf("the %s path: %v", noun, err)
	case st.IsDir():
		return 0, nil, fmt.Errorf("the %s path %s is a directory", noun, path)
	case st.Mode()&fs.ModeSymlink != 0:
		if t, err := os.Stat(path); err == nil && trusted(st) && deviceOK(t) {
			return device(path, t, check)
		}
		return replace(st)
	case st.Mode().IsRegular():
		if check {
			if err := canWrite(path, st); err != nil {
				return 0, nil, fmt.Errorf("cannot write %s: %v", path, err)
			}
			if canCreateIn(dir) != nil || !mayReplace(dst, st) {
				if links(st) != 1 {
					return 0, nil, fmt.Errorf("cannot replace %s in %s, and it has %d links: contain writes only a file of one link in place", path, dir, links(st))
				}
				return howInPlace, st, nil
			}
		}
		return howReplace, st, nil
	case deviceOK(st):
		return device(path, st, check)
	}
	return 0, nil, fmt.Errorf("the %s path %s is %s of uid %d's, which contain does not write", noun, path, kindOf(st), ownerOf(st))
}

// device is a FIFO or character device written in place.
func device(path string, st fs.FileInfo, check bool) (how, fs.FileInfo, error) {
	if check {
		if err := canWrite(path, st); err != nil {
			return 0, nil, fmt.Errorf("cannot write %s: %v", path, err)
		}
	}
	return howDevice, st, nil
}

// deviceOK: a character device (only root makes one), or a FIFO of this
// user's or root's.
func deviceOK(st fs.FileInfo) bool {
	m := st.Mode()
	return m&fs.ModeCharDevice != 0 || m&fs.ModeNamedPipe != 0 && trusted(st)
}

// kindOf names what st is, for an error.
func kindOf(st fs.FileInfo) string {
	m := st.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "something"
}

// writeFile writes data to path as plan decides.
func writeFile(path string, data []byte) error {
	h, st, err := plan(path, false, "report")
	if err != nil {
		return err
	}
	switch h {
	case howFD:
		fd, _ := fdPath(path)
		return writeFD(fd, data)
	case howDevice:
		return writeDevice(path, st, data)
	}
	err = replaceFile(path, st, data)
	var pe *os.PathError
	if err != nil && st != nil && st.Mode().IsRegular() && links(st) == 1 && errors.As(err, &pe) && refused(pe.Err) {
		// A directory this user may not create in, or a sticky one.
		return writeInPlace(path, st, data)
	}
	return err
}

// replaceFile writes data to a new file beside path (createBeside) and
// renames it over path: whatever was at path, a link included, is
// replaced, never written through. old is what was there (nil: nothing).
func replaceFile(path string, old fs.FileInfo, data []byte) error {
	f, err := createBeside(path, old)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// createBeside creates a new file beside path (O_CREAT|O_EXCL, a random
// name, which no link can redirect), with the permissions of old when it
// is the user's own regular file (nil: nothing was there), and returns it
// open; its name is f.Name().
func createBeside(path string, old fs.FileInfo) (*os.File, error) {
	dir, base := filepath.Split(path)
	var f *os.File
	var err error
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".contain-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, writeMode)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if old != nil && old.Mode().IsRegular() && ownerOf(old) == myUID() {
		if err := f.Chmod(old.Mode().Perm()); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
	}
	return f, nil
}

// writeDevice writes data to a FIFO or character device (Windows: a
// device or named pipe), opened as openDevice opens it.
func writeDevice(path string, st fs.FileInfo, data []byte) error {
	return writeOpened(openDevice(path, st))(data)
}

// writeInPlace truncates and writes the existing file path, opened as
// openInPlace opens it.
func writeInPlace(path string, st fs.FileInfo, data []byte) error {
	return writeOpened(openInPlace(path, st))(data)
}

// writeOpened writes data to f, opened with err, and closes it: the
// error of the open, the write or the close, the first.
func writeOpened(f *os.File, err error) func(data []byte) error {
	return func(data []byte) error {
		if err != nil {
			return err
		}
		_, err := f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}
