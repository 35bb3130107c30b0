//go:build !linux

package platform

import (
	"io"
	"os"
)

// Stderr is where contain writes its messages: os.Stderr, which on macOS
// raises SIGPIPE when it is a closed pipe, as a Go program's stderr does.
func Stderr() io.Writer { return os.Stderr }
