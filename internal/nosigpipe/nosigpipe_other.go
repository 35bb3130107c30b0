//go:build !linux && !darwin

package nosigpipe

import (
	"io"
	"os"
)

// Stderr is where contain writes its messages: os.Stderr. (Windows has
// no SIGPIPE.)
func Stderr() io.Writer { return os.Stderr }

// Pipe is w: no SIGPIPE here.
func Pipe(w *os.File) io.Writer { return w }
