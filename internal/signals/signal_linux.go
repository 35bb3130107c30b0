package signals

import (
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// glibc reserves signals 32 and 33 for itself, so user programs (and GNU
// timeout) see SIGRTMIN as 34; SIGRTMAX is 64.
const (
	maxSignal = 64
	RTMin     = 34
	RTMax     = 64
)

func realtimeSignal(name string) (syscall.Signal, bool) {
	base, rest := 0, ""
	switch {
	case strings.HasPrefix(name, "RTMIN"):
		base, rest = RTMin, name[len("RTMIN"):]
	case strings.HasPrefix(name, "RTMAX"):
		base, rest = RTMax, name[len("RTMAX"):]
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
	if sig := base + n; sig >= RTMin && sig <= RTMax {
		return syscall.Signal(sig), true
	}
	return 0, false
}

func realtimeName(sig syscall.Signal) (string, bool) {
	if sig < RTMin || sig > RTMax {
		return "", false
	}
	if sig == RTMin {
		return "SIGRTMIN", true
	}
	return "SIGRTMIN+" + strconv.Itoa(int(sig)-RTMin), true
}

// AddTo adds sig to set, as sigaddset(3).
func AddTo(set *unix.Sigset_t, sig unix.Signal) {
	bit, width := uint(sig)-1, uint(unsafe.Sizeof(set.Val[0])*8)
	set.Val[bit/width] |= 1 << (bit % width)
}
