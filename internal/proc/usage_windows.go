package proc

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/session"
)

// K32GetProcessMemoryInfo is psapi's GetProcessMemoryInfo as kernel32
// exports it (Windows 7 and later); x/sys does not wrap it.
var (
	kernel32                    = windows.NewLazySystemDLL("kernel32.dll")
	procK32GetProcessMemoryInfo = kernel32.NewProc("K32GetProcessMemoryInfo")
)

// processMemoryCounters is PROCESS_MEMORY_COUNTERS of <psapi.h>.
type processMemoryCounters struct {
	cb                         uint32
	pageFaultCount             uint32
	peakWorkingSetSize         uintptr
	workingSetSize             uintptr
	quotaPeakPagedPoolUsage    uintptr
	quotaPagedPoolUsage        uintptr
	quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage     uintptr
	pagefileUsage              uintptr
	peakPagefileUsage          uintptr
}

// UsageOf reads pid's CPU time and resident memory (UsageOfHandle),
// through a handle of its own. A process that has exited, whose object
// another handle keeps, is gone (ErrGone), as the listing counts it.
// childCPU is 0: Windows keeps no count of a process's ended children (a
// Job Object does, of its members).
func UsageOf(pid int, _ []byte) (u session.Usage, childCPU time.Duration, err error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			err = ErrGone
		}
		return session.Usage{}, 0, fmt.Errorf("OpenProcess(%d): %w", pid, err)
	}
	defer windows.CloseHandle(h)
	if ev, _ := windows.WaitForSingleObject(h, 0); ev == windows.WAIT_OBJECT_0 {
		return session.Usage{}, 0, fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	u, err = UsageOfHandle(h)
	return u, 0, err
}

// UsageOfHandle reads, through h (PROCESS_QUERY_LIMITED_INFORMATION), the
// process's CPU time (GetProcessTimes: user and kernel, all its threads,
// in 100 ns units) and resident memory (its working set, from
// K32GetProcessMemoryInfo).
func UsageOfHandle(h windows.Handle) (session.Usage, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return session.Usage{}, fmt.Errorf("GetProcessTimes: %w", err)
	}
	if err := procK32GetProcessMemoryInfo.Find(); err != nil {
		return session.Usage{}, err
	}
	m := processMemoryCounters{cb: uint32(unsafe.Sizeof(processMemoryCounters{}))}
	r, _, err := procK32GetProcessMemoryInfo.Call(uintptr(h), uintptr(unsafe.Pointer(&m)), uintptr(m.cb))
	if r == 0 {
		return session.Usage{}, fmt.Errorf("K32GetProcessMemoryInfo: %w", err)
	}
	return session.Usage{CPU: filetimeSpan(kernel) + filetimeSpan(user), RSS: uint64(m.workingSetSize), Known: true}, nil
}

// filetimeSpan is a FILETIME that holds a span, not a date: 100 ns units.
func filetimeSpan(f windows.Filetime) time.Duration {
	return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
}
