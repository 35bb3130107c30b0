//go:build !unix

package procfs

import (
	"io"
	"os"
)

type file struct{ f *os.File }

func openFile(path string) (file, error) {
	f, err := os.Open(path)
	return file{f}, err
}

func (f file) read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	if err == io.EOF {
		return n, nil
	}
	return n, err
}

func (f file) close() { f.f.Close() }
