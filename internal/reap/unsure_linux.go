package reap

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/procfs"
)

// wallOfStart turns a start time (clock ticks after boot, on the boot
// clock, as /proc gives it) into wall-clock time.
func wallOfStart(start uint64) time.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return time.Time{}
	}
	sinceBoot := time.Duration(ts.Nano())
	at := time.Duration(start) * (time.Second / procfs.TicksPerSecond)
	return time.Now().Add(at - sinceBoot)
}
