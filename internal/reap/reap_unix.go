//go:build linux || darwin

package reap

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// firstSignalEnds: a first signal of STOP or CONT ends nothing.
func firstSignalEnds(sig syscall.Signal) bool { return sig != unix.SIGSTOP && sig != unix.SIGCONT }

// opName names what each step sends, for the log and the report.
func opName(o op, sig syscall.Signal) string {
	switch o {
	case opStop:
		return "SIGSTOP"
	case opResume:
		return "SIGCONT"
	case opSignal:
		return signals.Name(sig)
	}
	return killName
}

// killName names the end reap gives a process.
const killName = "SIGKILL"
