package report

import (
	"path/filepath"
	"strconv"
	"strings"
)

// fdPath reads a path that names one of this process's file descriptors:
// /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N and
// /proc/thread-self/fd/N. On Linux these are links into /proc, whose
// opening would make a new open file of what the descriptor names (a file
// a shell redirected to: truncated, or written from its start); contain
// writes to the descriptor itself instead, as a shell does.
func fdPath(path string) (int, bool) {
	switch p := filepath.Clean(path); p {
	case "/dev/stdin":
		return 0, true
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	default:
		for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
			if n, ok := strings.CutPrefix(p, dir); ok {
				fd, err := strconv.Atoi(n)
				return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == n
			}
		}
	}
	return 0, false
}
