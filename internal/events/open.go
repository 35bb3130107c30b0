package events

import (
	"fmt"
	"io"

	"strconv"
	"strings"

	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/report"
)

// noun names the file in errors.
const noun = "events file"

// Open opens where contain run --events TO sends the lines: "-" is
// stderr (the writer given), fd:N a descriptor contain inherited, open
// for writing, anything else a FILE, opened as the report's path would
// be written (report.OpenStream: created anew and renamed over the path,
// a link there replaced, never followed). done closes what Open opened.
func Open(to string, stderr io.Writer) (w io.Writer, done func(), err error) {
	if to == "-" {
		return stderr, func() {}, nil
	}
	if n, ok, err := parseFD(to); ok || err != nil {
		if err != nil {
			return nil, nil, err
		}
		if err := checkFD(n); err != nil {
			return nil, nil, err
		}
		return fdWriter(n), func() {}, nil
	}
	f, fd, err := report.OpenStream(to, noun)
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		// A path that names one of contain's descriptors (Linux's
		// /dev/stderr): that descriptor, as the report is written, if
		// contain inherited it.
		if err := checkFD(fd); err != nil {
			return nil, nil, err
		}
		return fdWriter(fd), func() {}, nil
	}
	return nosigpipe.Pipe(f), func() { f.Close() }, nil
}

// Check refuses, before anything runs, a TO that Open could not open:
// an fd:N that is not open for writing, or a path as report.CheckStream
// says. It creates and truncates nothing.
func Check(to string) error {
	switch n, ok, err := parseFD(to); {
	case to == "-":
		return nil
	case err != nil:
		return err
	case ok:
		return checkFD(n)
	}
	return report.CheckStream(to, noun)
}

// parseFD reads fd:N; ok is false for anything else (a FILE).
func parseFD(to string) (n int, ok bool, err error) {
	v, ok := strings.CutPrefix(to, "fd:")
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 0 || strconv.Itoa(n) != v {
		return 0, true, fmt.Errorf("%s: not a file descriptor number (fd:N, N a number from 0; a FILE named so: ./%s)", to, to)
	}
	return n, true, nil
}
