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

// writeDevice writes data to a device or named pipe (NUL, \\.\pipe\...).
func writeDevice(path string, _ fs.FileInfo, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(data)
	return err
}

// writeInPlace truncates and writes the existing file path.
func writeInPlace(path string, st fs.FileInfo, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(now, st) {
		return errors.New(path + ": changed since contain looked at it")
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.Write(data)
	return err
}
