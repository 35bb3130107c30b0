package platform

import (
	"strconv"
	"syscall"
)

// Windows has no POSIX signals; the names are still parsed so that options
// and scripts mean the same on every OS.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"ILL": syscall.SIGILL, "TRAP": syscall.SIGTRAP, "ABRT": syscall.SIGABRT,
	"BUS": syscall.SIGBUS, "FPE": syscall.SIGFPE, "KILL": syscall.SIGKILL,
	"SEGV": syscall.SIGSEGV, "PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM,
	"TERM": syscall.SIGTERM,
}

const maxSignal = 15

func signalByName(name string) (syscall.Signal, bool) {
	sig, ok := signalNames[name]
	return sig, ok
}

// SignalName names a signal for messages.
func SignalName(sig syscall.Signal) string {
	for n, s := range signalNames {
		if s == sig {
			return "SIG" + n
		}
	}
	return strconv.Itoa(int(sig))
}
