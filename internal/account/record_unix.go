//go:build linux || darwin

package account

import (
	"time"

	"golang.org/x/sys/unix"
)

// recorderOS is what Linux and macOS add to the Recorder: the rusage
// and wait statuses of what contain reaped, and the most live members one
// scan saw.
type recorderOS struct {
	usage  Usage                   // of every process contain reaped
	peak   int                     // the most live members one scan saw
	reaped map[int]unix.WaitStatus // processes other than COMMAND that contain reaped
}

// Ref: Linux and macOS hold no process while the report is made (a pin's
// start time tells a recycled PID).
type Ref struct{}

// New is the account of a run: nil, which records nothing, unless
// collect.
func New(collect bool) *Recorder {
	if !collect {
		return nil
	}
	return &Recorder{recorderOS: recorderOS{reaped: map[int]unix.WaitStatus{}}}
}

// ReapedOne counts a process contain reaped (command: COMMAND's PID,
// whose status the run keeps itself); ru may be nil (the shim reaped it).
func (rec *Recorder) ReapedOne(pid, command int, ws unix.WaitStatus, ru *unix.Rusage) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if ru != nil {
		rec.usage.add(ru)
	}
	if pid != command {
		rec.reaped[pid] = ws
	}
}

// Reaped is the wait status of pid, when contain reaped it (not
// COMMAND).
func (rec *Recorder) Reaped(pid int) (unix.WaitStatus, bool) {
	if rec == nil {
		return 0, false
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ws, ok := rec.reaped[pid]
	return ws, ok
}

// SawLive records how many members one scan saw alive.
func (rec *Recorder) SawLive(n int) {
	if rec != nil {
		rec.mu.Lock()
		rec.peak = max(rec.peak, n)
		rec.mu.Unlock()
	}
}

// Usage is what the processes contain reaped used, each with what it
// reaped in turn, and the most live members one scan saw (Peak).
func (rec *Recorder) Usage() Usage {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	u := rec.usage
	u.Peak = rec.peak
	return u
}

// Usage adds up the rusage of the processes contain reaped.
type Usage struct {
	User, System time.Duration
	MaxRSS       uint64 // bytes, the largest of one process
	N            int    // processes counted
	Peak         int
}

func (u *Usage) add(ru *unix.Rusage) {
	u.User += time.Duration(ru.Utime.Nano())
	u.System += time.Duration(ru.Stime.Nano())
	u.MaxRSS = max(u.MaxRSS, maxRSSBytes(ru))
	u.N++
}
