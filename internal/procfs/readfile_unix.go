//go:build unix

package procfs

import (
	"os"
	"syscall"
)

// file is a plain descriptor: os.Open would fstat each /proc file to decide
// whether to poll it, a system call a scan of every process pays thousands
// of times.
type file int

func openFile(path string) (file, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return file(fd), nil
	}
}

func (f file) read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func (f file) close() { syscall.Close(int(f)) }
