//go:build linux || darwin

package proc

import "golang.org/x/sys/unix"

// StoppedStatus reports whether ws says the process stopped. WaitStatus.Stopped
// is false for a stop by SIGSTOP on the BSDs, macOS included (it takes
// SIGSTOP for the marker of a continued process): the bits decide.
func StoppedStatus(ws unix.WaitStatus) bool { return ws&0xff == 0x7f }

// ReapEnded reaps, with wait (which must not block), every child that has
// ended, handing each to ended, and reports whether any child is still
// alive. contain's reaper and the shim's share it.
func ReapEnded(wait func(*unix.WaitStatus, *unix.Rusage) (int, error), ended func(int, unix.WaitStatus, *unix.Rusage)) bool {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		wpid, err := wait(&ws, &ru)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		case wpid == 0:
			return true
		default:
			ended(wpid, ws, &ru)
		}
	}
}
