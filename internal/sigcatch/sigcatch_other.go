//go:build !(linux && amd64)

package sigcatch

import (
	"os"
	"syscall"
)

// Catch: no handler of contain's own here (ErrUnsupported).
func Catch(sigs []syscall.Signal, c chan<- os.Signal) error { return ErrUnsupported }
