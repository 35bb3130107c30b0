//go:build !unix

package report

import (
	"errors"
	"io/fs"
	"os"
)

// Windows: no owners are read (a link or FIFO planted by another user
// needs a privilege there); a file's links are not counted.
func ownerOf(fs.FileInfo) int          { return -1 }
func myUID() int                       { return -2 } // no file is the user's: modes are not copied
func links(fs.FileInfo) uint64         { return 1 }
func trusted(fs.FileInfo) bool         { return true }
func mayReplace(_, _ fs.FileInfo) bool { return true }
func refused(err error) bool           { return errors.Is(err, fs.ErrPermission) }
func writeFD(int, []byte) error        { return errors.ErrUnsupported }
func fdOpen(int) bool                  { return false }

// openDevice opens a device or named pipe for writing.
func openDevice(path string, _ fs.FileInfo) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}

// openInPlace opens the existing file path, as it was found (st), and
// truncates it.
func openInPlace(path string, st fs.FileInfo) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	now, err := f.Stat()
	if err != nil || !os.SameFile(now, st) {
		f.Close()
		return nil, errors.New(path + ": changed since contain looked at it")
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// renameOpen renames the new file f over path and returns path open for
// writing: Windows renames no file that is open (Go opens files without
// FILE_SHARE_DELETE), so f is closed first and path opened again.
func renameOpen(f *os.File, path string) (*os.File, error) {
	tmp := f.Name()
	f.Close()
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY, 0)
}
