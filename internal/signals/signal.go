//go:build unix || windows

// Package signals reads and names signals the way GNU timeout does, per OS:
// POSIX names and numbers (Linux's real-time ones included), and on Windows
// the few ways a process can be asked to stop.
package signals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Parse reads a signal the way GNU timeout does: a name with or
// without "SIG", in any case (TERM, SIGTERM, term), a number (15), or on
// Linux a real-time signal (RTMIN+2, RTMAX-1). 0 is accepted: it sends
// nothing.
func Parse(s string) (syscall.Signal, error) {
	name := strings.ToUpper(s)
	if name == "" {
		return 0, fmt.Errorf("invalid signal %q", s)
	}
	if name[0] >= '0' && name[0] <= '9' {
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 || n > maxSignal {
			return 0, fmt.Errorf("invalid signal %q: a number must be 0..%d", s, maxSignal)
		}
		if !signalNumber(n) {
			return 0, fmt.Errorf("invalid signal %q%s", s, signalHint)
		}
		return syscall.Signal(n), nil
	}
	if sig, ok := signalByName(strings.TrimPrefix(name, "SIG")); ok {
		return sig, nil
	}
	return 0, fmt.Errorf("invalid signal %q%s", s, signalHint)
}

// Names lists, by number, the names of the signals Parse takes on this OS,
// without "SIG": what completion offers after -s. Linux's real-time
// signals are there as RTMIN and RTMAX, not each RTMIN+N.
func Names() []string {
	var names []string
	for n := 1; n <= maxSignal; n++ {
		name, ok := strings.CutPrefix(Name(syscall.Signal(n)), "SIG")
		if !ok || strings.ContainsAny(name, "+-") || slices.Contains(names, name) {
			continue
		}
		if _, err := Parse(name); err == nil {
			names = append(names, name)
		}
	}
	if _, err := Parse("RTMAX"); err == nil {
		names = append(names, "RTMAX")
	}
	return names
}
