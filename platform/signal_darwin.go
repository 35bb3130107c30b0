package platform

import "syscall"

// macOS has no real-time signals; its numbers end at SIGUSR2 (31).
const maxSignal = 31

func realtimeSignal(string) (syscall.Signal, bool) { return 0, false }

func realtimeName(syscall.Signal) (string, bool) { return "", false }
