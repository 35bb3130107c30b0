package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
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

// parseSigIgn finds the SigIgn line of a /proc/PID/status file: 16 hex
// digits, the signals the process ignores (its disposition SIG_IGN).
func parseSigIgn(b []byte) (uint64, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if rest, ok := bytes.CutPrefix(line, []byte("SigIgn:")); ok {
			mask, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("status: SigIgn: %w", err)
			}
			return mask, nil
		}
	}
	return 0, errors.New("status has no SigIgn line")
}
