package proc

import (
	"errors"
	"syscall"
)

// ErrNoSignalMask: this OS tells no process's signal dispositions.
var ErrNoSignalMask = errors.New("the OS does not tell which signals a process ignores")

// ignoresIn reports whether sig's bit is set in mask, a set of signals as
// Linux's /proc/PID/status and XNU's p_sigignore both have it: bit N-1
// for signal N.
func ignoresIn(mask uint64, sig syscall.Signal) bool {
	return sig >= 1 && sig <= 64 && mask&(1<<(uint(sig)-1)) != 0
}
