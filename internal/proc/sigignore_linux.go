package proc

import "syscall"

// IgnoresSignal reports whether pid ignores sig: its disposition is
// SIG_IGN (SigIgn in /proc/PID/status), so that sig sent to it does
// nothing at all. A shell without job control starts its background jobs
// so for SIGINT and SIGQUIT, and contain run keeps SIGINT ignored when it
// started so, as GNU timeout does.
func IgnoresSignal(pid int, sig syscall.Signal) (bool, error) {
	mask, err := FS.SigIgn(pid, nil)
	if err != nil {
		return false, err
	}
	return ignoresIn(mask, sig), nil
}
