//go:build !unix

package report

import (
	"errors"
	"io/fs"
)

// canWrite refuses a file marked read-only, which Windows will not open
// for writing. Access control lists are not read: one that denies writing
// still makes the write at the end fail, with one line on stderr.
var canWrite = func(_ string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o200 == 0 {
		return errors.New("the file is read-only")
	}
	return nil
}

// canCreateIn: Windows has no access(2); an access control list that
// denies creating the file makes the write at the end fail instead.
var canCreateIn = func(string) error { return nil }
