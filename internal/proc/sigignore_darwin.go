package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// IgnoresSignal reports whether pid ignores sig: its disposition is
// SIG_IGN, as the kernel's kinfo_proc has it (p_sigignore, what ps -o
// ignored shows), so that sig sent to it does nothing at all.
func IgnoresSignal(pid int, sig syscall.Signal) (bool, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return false, err
	}
	if int(k.Proc.P_pid) != pid {
		return false, syscall.ESRCH
	}
	return ignoresIn(uint64(k.Proc.P_sigignore), sig), nil
}
