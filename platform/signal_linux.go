package platform

import (
	"strconv"
	"strings"
	"syscall"
)

// glibc reserves signals 32 and 33 for itself, so user programs (and GNU
// timeout) see SIGRTMIN as 34; SIGRTMAX is 64.
const (
	maxSignal = 64
	rtMin     = 34
	rtMax     = 64
)

func realtimeSignal(name string) (syscall.Signal, bool) {
	base, rest := 0, ""
	switch {
	case strings.HasPrefix(name, "RTMIN"):
		base, rest = rtMin, name[len("RTMIN"):]
	case strings.HasPrefix(name, "RTMAX"):
		base, rest = rtMax, name[len("RTMAX"):]
	default:
		return 0, false
	}
	if rest == "" {
		return syscall.Signal(base), true
	}
	if len(rest) < 2 || (rest[0] != '+' && rest[0] != '-') {
		return 0, false
	}
	n, err := strconv.Atoi(rest[1:])
	if err != nil || rest[1] == '+' || rest[1] == '-' {
		return 0, false
	}
	if rest[0] == '-' {
		n = -n
	}
	if sig := base + n; sig >= rtMin && sig <= rtMax {
		return syscall.Signal(sig), true
	}
	return 0, false
}

func realtimeName(sig syscall.Signal) (string, bool) {
	if sig < rtMin || sig > rtMax {
		return "", false
	}
	if sig == rtMin {
		return "SIGRTMIN", true
	}
	return "SIGRTMIN+" + strconv.Itoa(int(sig)-rtMin), true
}
