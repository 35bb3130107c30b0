//go:build linux || darwin

// Package nosigpipe writes to contain's stderr and to its pipes so that a
// reader gone makes the write fail with EPIPE and nothing else: contain run
// forwards every SIGPIPE it receives to COMMAND's group, as one sent from
// outside, and must neither die of its own nor take it for one.
package nosigpipe

import (
	"io"
	"os"
)

// Pipe is a writer to the pipe w whose writes fail with EPIPE, and raise
// no SIGPIPE, once the reader is gone.
func Pipe(w *os.File) io.Writer {
	Quiet(w)
	return Writer(w)
}
