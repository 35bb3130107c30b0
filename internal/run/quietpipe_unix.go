//go:build linux || darwin

package run

import (
	"io"
	"os"
)

// QuietPipe is a writer to the pipe w whose writes fail with EPIPE, and
// raise no SIGPIPE, once the reader is gone: contain run forwards a
// SIGPIPE it did not expect to COMMAND's group, as one sent from outside.
func QuietPipe(w *os.File) io.Writer {
	quietPipe(w)
	return guardPipe(w)
}
