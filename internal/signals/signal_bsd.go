//go:build unix && !linux

package signals

import "syscall"

// macOS has no real-time signals; its numbers end at SIGUSR2 (31). The
// other BSDs are treated alike: their real-time signals are not named.
const maxSignal = 31

func realtimeSignal(string) (syscall.Signal, bool) { return 0, false }

func realtimeName(syscall.Signal) (string, bool) { return "", false }
