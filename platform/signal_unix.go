//go:build linux || darwin

package platform

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal reads a signal the way GNU timeout does: a name with or
// without "SIG" (TERM, SIGTERM, any case), a number (15), or on Linux a
// real-time signal (RTMIN+2, RTMAX-1). 0 is accepted: it sends nothing.
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
	name = strings.TrimPrefix(name, "SIG")
	if sig, ok := realtimeSignal(name); ok {
		return sig, nil
	}
	if sig := unix.SignalNum("SIG" + name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("invalid signal %q", s)
}

// SignalName names a signal for messages: SIGTERM, SIGRTMIN+2, or 0.
func SignalName(sig syscall.Signal) string {
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
