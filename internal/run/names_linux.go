package run

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

// reapWait is wait, with the name of the child it reaped for -v: the
// child is first looked at without being reaped (waitid with WNOWAIT),
// while /proc still shows it (a zombie keeps its name), then reaped by
// its PID. Without -v it is wait, and the name is "".
func (sys *linuxOS) reapWait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, string, error) {
	if sys.r.o.Log == nil {
		pid, err := sys.wait(ws, flags, ru)
		return pid, "", err
	}
	opts := unix.WEXITED | unix.WNOWAIT | sys.waitFlags | flags&unix.WNOHANG
	if flags&unix.WUNTRACED != 0 {
		opts |= unix.WSTOPPED
	}
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, opts, nil); err != nil {
			return 0, "", err
		}
		pid := siginfoPID(&info)
		if pid == 0 {
			return 0, "", nil // WNOHANG: none has ended
		}
		name := proc.CommOf(pid)
		// WNOHANG: a stopped child continued since it was looked at has
		// nothing to report any more; then look again.
		wpid, err := unix.Wait4(pid, ws, flags|unix.WNOHANG|sys.waitFlags, ru)
		if err == unix.EINTR || err == nil && wpid == 0 {
			continue
		}
		return wpid, name, err
	}
}

// siginfoPID is si_pid of a siginfo that waitid filled: after si_signo,
// si_errno and si_code, where the union begins, aligned as a pointer.
func siginfoPID(info *unix.Siginfo) int {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
