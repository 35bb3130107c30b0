//go:build unix

package signals

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalHint adds nothing to an invalid signal's message: the names are
// the usual ones.
const signalHint = ""

// signalNumber: every number up to maxSignal is a signal.
func signalNumber(int) bool { return true }

// signalByName knows the OS's signal names, without "SIG", upper case.
func signalByName(name string) (syscall.Signal, bool) {
	if sig, ok := realtimeSignal(name); ok {
		return sig, true
	}
	sig := unix.SignalNum("SIG" + name)
	return sig, sig != 0
}

// Name names a signal for messages: SIGTERM, SIGRTMIN+2, or 0.
func Name(sig syscall.Signal) string {
	if sig == 0 {
		return "0"
	}
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	if s, ok := realtimeName(sig); ok {
		return s
	}
	return "signal " + strconv.Itoa(int(sig))
}
