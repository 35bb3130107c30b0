package proc

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/session"
)

// macTimebase is the unit of proc_taskinfo's times on this Mac, read once
// (MacTimebaseOf). x/sys has no mach_timebase_info; hw.tbfrequency is the
// same kernel value as a frequency, and sysctl.proc_translated says
// whether Rosetta runs contain.
var macTimebase = sync.OnceValue(func() MacTimebase {
	freq, err := unix.SysctlUint64("hw.tbfrequency")
	if err != nil {
		f32, err32 := unix.SysctlUint32("hw.tbfrequency")
		freq = uint64(f32)
		if err32 != nil {
			freq = 0
		}
	}
	translated, err := unix.SysctlUint32("sysctl.proc_translated")
	return MacTimebaseOf(freq, runtime.GOARCH, err == nil && translated == 1)
})

// UsageOf reads pid's CPU time and resident memory: proc_info(2) with
// PROC_INFO_CALL_PIDINFO and PROC_PIDTASKINFO, the system call behind
// libproc's proc_pidinfo, which x/sys does not wrap. The kernel allows it
// on contain's user's processes (every process as root), and says ESRCH
// for a PID that is gone. childCPU is 0: macOS keeps no count of the
// children a process waited for that another process could read. buf,
// when it holds a struct proc_taskinfo, spares an allocation.
func UsageOf(pid int, buf []byte) (u session.Usage, childCPU time.Duration, err error) {
	if cap(buf) < macTaskInfoSize {
		buf = make([]byte, macTaskInfoSize)
	}
	buf = buf[:macTaskInfoSize]
	n, _, errno := unix.Syscall6(unix.SYS_PROC_INFO, macProcInfoCallPIDInfo, uintptr(pid), macPIDTaskInfo, 0,
		uintptr(unsafe.Pointer(&buf[0])), macTaskInfoSize)
	if errno != 0 {
		return session.Usage{}, 0, fmt.Errorf("proc_pidinfo(%d, PROC_PIDTASKINFO): %w", pid, errno)
	}
	u, err = MacTaskUsage(buf[:min(int(n), len(buf))], macTimebase())
	return u, 0, err
}
