package job

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

// Calls x/sys does not wrap.
var (
	kernel32                       = windows.NewLazySystemDLL("kernel32.dll")
	procIsProcessInJob             = kernel32.NewProc("IsProcessInJob")
	procGetQueuedCompletionStatus  = kernel32.NewProc("GetQueuedCompletionStatus")
	procPostQueuedCompletionStatus = kernel32.NewProc("PostQueuedCompletionStatus")
)

// Job is a Job Object that kills every process in it when its last handle
// closes: when contain closes it, or when contain ends however it ends
// (TerminateProcess, a crash), since only contain holds it. The handle is
// never inheritable. BREAKAWAY_OK is set only for --allow-daemons
// (PermitBreakaway): otherwise nothing in the job can leave it.
type Job struct {
	h     windows.Handle
	flags uint32 // the limit flags every setting keeps: kill on close, breakaway

	// The job's completion port, read by one goroutine (readPort), which
	// hands each message to whoever asked for it: new processes to
	// onNew, the limits' messages to the limits' own port (fwd).
	portOnce sync.Once
	port     windows.Handle
	portErr  error
	portDone chan struct{} // closed when readPort returns
	mu       sync.Mutex
	onNew    func(pid int)  // JOB_OBJECT_MSG_NEW_PROCESS; nil: none wanted
	fwd      windows.Handle // 0: the limits' messages are not wanted
	flushed  chan struct{}  // closed by readPort at the flush packet
}

// New makes a kill-on-close job object with no name, that only
// contain's user (and SYSTEM and the Administrators) may open (OwnerOnly):
// another user cannot reach it by name, nor open it through a handle.
func New() (*Job, error) {
	sa, err := proc.OwnerOnly(jobAllAccess)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	h, err := windows.CreateJobObject(sa, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	j := &Job{h: h, flags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE}
	if err := j.setFlags(); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("cannot make the job object kill on close: %w", err)
	}
	return j, nil
}

// jobAllAccess is a job object's all-access right (winnt.h).
const jobAllAccess = 0x1F003F

// setFlags sets the job's limit flags to j.flags, no limit among them.
func (j *Job) setFlags() error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = j.flags
	_, err := windows.SetInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	return err
}

// PermitBreakaway lets a process of the job start a child outside it
// (CREATE_BREAKAWAY_FROM_JOB, which contain run -d asks for): what
// --allow-daemons needs. Windows then grants it to any process, marked
// as a daemon or not: the breakaway watch (WatchBreakaway) puts back
// those that are not. Kill on close stays, for every process that did
// not break away.
func (j *Job) PermitBreakaway() error {
	j.flags |= windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
	if err := j.setFlags(); err != nil {
		j.flags &^= windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
		return err
	}
	return nil
}

// Accounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type Accounting struct {
	TotalUserTime, TotalKernelTime                     int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount                                uint32
	TotalProcesses, ActiveProcesses                    uint32
	TotalTerminatedProcesses                           uint32
}

// Accounting reads the job's basic accounting.
func (j *Job) Accounting() (Accounting, error) {
	var acc Accounting
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acc)), uint32(unsafe.Sizeof(acc)), nil)
	return acc, err
}

// CPU is the CPU time, user and kernel, of every process that ran in the
// job, those that ended included.
func (acc Accounting) CPU() time.Duration {
	return time.Duration(acc.TotalUserTime+acc.TotalKernelTime) * 100
}

// IOAccounting is JOBOBJECT_BASIC_AND_IO_ACCOUNTING_INFORMATION.
type IOAccounting struct {
	Basic Accounting
	IO    windows.IO_COUNTERS
}

// IOAccounting reads the job's accounting with its I/O, for the report.
func (j *Job) IOAccounting() (IOAccounting, error) {
	var acc IOAccounting
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAndIoAccountingInformation,
		uintptr(unsafe.Pointer(&acc)), uint32(unsafe.Sizeof(acc)), nil)
	return acc, err
}

// Active counts the live processes of the job; an error counts as some, so
// that contain never returns early.
func (j *Job) Active() (int, error) {
	acc, err := j.Accounting()
	if err != nil {
		return 1, err
	}
	return int(acc.ActiveProcesses), nil
}

// Limit sets the job's memory limit (JobMemoryLimit: the committed memory
// of all its processes; an allocation past it fails) and its limit on
// processes alive at once (a process start past it fails); 0 sets none.
// Kill on close (and breakaway, where permitted) stays.
func (j *Job) Limit(memory uint64, procs int) error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = j.flags
	if memory > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(min(memory, uint64(math.MaxInt64)))
	}
	if procs > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(min(procs, math.MaxUint32))
	}
	_, err := windows.SetInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	return err
}

// jobCPURate is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION with a CpuRate,
// which x/sys does not declare.
type jobCPURate struct {
	ControlFlags uint32
	CpuRate      uint32 // cycles per 10,000 of the whole machine's
}

const (
	jobCPURateEnable  = 0x1 // JOB_OBJECT_CPU_RATE_CONTROL_ENABLE
	jobCPURateHardCap = 0x4 // JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP
)

// CapCPU holds the job to cpus CPUs' worth of cycles (Windows 8 and
// later): a hard cap, the job's threads are not scheduled once it is used
// up in a scheduling interval.
func (j *Job) CapCPU(cpus float64) error {
	n := windows.GetActiveProcessorCount(windows.ALL_PROCESSOR_GROUPS)
	if n == 0 {
		n = 1
	}
	rate := jobCPURate{ControlFlags: jobCPURateEnable | jobCPURateHardCap,
		CpuRate: uint32(min(max(math.Round(cpus*10000/float64(n)), 1), 10000))}
	_, err := windows.SetInformationJobObject(j.h, windows.JobObjectCpuRateControlInformation,
		uintptr(unsafe.Pointer(&rate)), uint32(unsafe.Sizeof(rate)))
	return err
}

// PeakMemory is the most memory the job's processes had committed at
// once (all), and the most any one of them had (one).
func (j *Job) PeakMemory() (all, one uint64, err error) {
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	err = windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&ext)), uint32(unsafe.Sizeof(ext)), nil)
	return uint64(ext.PeakJobMemoryUsed), uint64(ext.PeakProcessMemoryUsed), err
}

// PIDs lists the processes of the job (for what -v says; nothing is
// signalled by these PIDs).
func (j *Job) PIDs() []int {
	const max = 4096
	var list struct {
		Assigned, InList uint32
		IDs              [max]uintptr
	}
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&list)), uint32(unsafe.Sizeof(list)), nil); err != nil && !errors.Is(err, windows.ERROR_MORE_DATA) {
		return nil
	}
	out := make([]int, 0, min(list.InList, max))
	for _, id := range list.IDs[:min(list.InList, max)] {
		out = append(out, int(id))
	}
	return out
}

// Holds reports whether process h is in the job; err is IsProcessInJob's
// own failure. Wine needs h opened with PROCESS_QUERY_INFORMATION (the
// limited right is refused: access denied).
func (j *Job) Holds(h windows.Handle) (bool, error) {
	var in int32
	if ok, _, err := procIsProcessInJob.Call(uintptr(h), uintptr(j.h), uintptr(unsafe.Pointer(&in))); ok == 0 {
		return false, err
	}
	return in != 0, nil
}

// Handle is the job's handle in this process: the value another process
// of the same user duplicates (DuplicateHandle, with a handle of this
// process) to start its processes into the job, as a held session's
// starter does. The job is kill on close still: it ends when every
// handle to it is closed, the duplicates included.
func (j *Job) Handle() windows.Handle { return j.h }

// Adopt is a job this process holds a handle to (a duplicate of another
// process's, Handle), for Start, PIDs and Holds. Close closes the
// handle.
func Adopt(h windows.Handle) *Job { return &Job{h: h} }

// Terminate ends every process of the job (proc.TerminateCode).
func (j *Job) Terminate() error { return windows.TerminateJobObject(j.h, proc.TerminateCode) }

// Close stops the port's reader and closes the job, which ends whatever
// is left in it.
func (j *Job) Close() {
	if j.port != 0 {
		j.post(portStopKey)
		<-j.portDone
		windows.CloseHandle(j.port)
	}
	windows.CloseHandle(j.h)
}
