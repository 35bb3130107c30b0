//go:build !linux && !darwin

package run

import (
	"io"
	"os"
)

// Stderr is where contain writes its messages: os.Stderr. (Windows has
// no SIGPIPE.)
func Stderr() io.Writer { return os.Stderr }
