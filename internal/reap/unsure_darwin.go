package reap

import "time"

// wallOfStart: macOS gives a start time as the wall clock, in
// microseconds.
func wallOfStart(start uint64) time.Time { return time.UnixMicro(int64(start)) }
