package account

import "golang.org/x/sys/unix"

// maxRSSBytes: Linux gives ru_maxrss in KiB.
func maxRSSBytes(ru *unix.Rusage) uint64 { return uint64(max(ru.Maxrss, 0)) * 1024 }

// MaxRSS is a reaped process's peak resident memory, in bytes.
func MaxRSS(ru *unix.Rusage) uint64 { return maxRSSBytes(ru) }
