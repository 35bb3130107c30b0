package platform

import (
	"fmt"
	"strconv"
	"strings"
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

// ParseSignal reads a signal name (TERM, SIGTERM) or number (15).
func ParseSignal(s string) (syscall.Signal, error) {
	name := strings.ToUpper(s)
	if name == "" {
		return 0, fmt.Errorf("invalid signal %q", s)
	}
	if name[0] >= '0' && name[0] <= '9' {
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 || n > maxSignal {
			return 0, fmt.Errorf("invalid signal %q: a number must be 0..%d", s, maxSignal)
		}
		return syscall.Signal(n), nil
	}
	if sig, ok := signalNames[strings.TrimPrefix(name, "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("invalid signal %q", s)
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
