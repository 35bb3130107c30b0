package report

import (
	"errors"
	"fmt"
	"os"
)

// CheckStream refuses, before anything runs, a path that OpenStream could
// not open, as CheckPath does for a report; noun names what is written
// there, in the error ("events file").
func CheckStream(path, noun string) error {
	if path == "" {
		return fmt.Errorf("the %s path is empty", noun)
	}
	_, _, err := plan(path, true, noun)
	return err
}

// OpenStream opens path for what a run writes as it goes (contain run
// --events FILE), as the report is written there (plan), but at the start
// and kept open: a new file beside the path (created with O_EXCL under a
// random name), renamed over it at once, so that a link at the path is
// replaced, never followed; a FIFO or character device opened as it is;
// an existing file of one link that cannot be replaced, truncated in
// place (O_NOFOLLOW). On Linux a path that names one of this process's
// descriptors (/dev/stderr, /dev/fd/N) is that descriptor: f is nil and
// fd is its number.
func OpenStream(path, noun string) (f *os.File, fd int, err error) {
	h, st, err := plan(path, false, noun)
	if err != nil {
		return nil, -1, err
	}
	switch h {
	case howFD:
		fd, _ := fdPath(path)
		if !fdOpen(fd) {
			return nil, -1, fmt.Errorf("the %s path %s names file descriptor %d, which is not open", noun, path, fd)
		}
		return nil, fd, nil
	case howDevice:
		f, err := openDevice(path, st)
		return f, -1, err
	}
	f, err = createBeside(path, st)
	if err == nil {
		f, err = renameOpen(f, path)
	}
	var pe *os.PathError
	var le *os.LinkError
	if err != nil && st != nil && st.Mode().IsRegular() && links(st) == 1 &&
		(errors.As(err, &pe) && refused(pe.Err) || errors.As(err, &le) && refused(le.Err)) {
		// A directory this user may not create in, or a sticky one.
		f, err = openInPlace(path, st)
	}
	if err != nil {
		return nil, -1, err
	}
	return f, -1, nil
}
