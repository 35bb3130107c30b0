//go:build unix

package procfs

import (
	"errors"
	"syscall"
)

// isESRCH reports a process that has no memory to read any more: a zombie,
// a kernel thread, or one that exited while it was read.
func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }
