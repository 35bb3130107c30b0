package account

import "golang.org/x/sys/unix"

// maxRSSBytes: Linux gives ru_maxrss in KiB.
func maxRSSBytes(ru *unix.Rusage) uint64 { return uint64(max(ru.Maxrss, 0)) * 1024 }
