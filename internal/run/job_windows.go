package run

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"github.com/contain-cli/contain/internal/proc"
	"golang.org/x/sys/windows"
)

// A call x/sys does not wrap.
var (
	kernel32                  = windows.NewLazySystemDLL("kernel32.dll")
	procSetConsoleCtrlHandler = kernel32.NewProc("SetConsoleCtrlHandler")
)

// job is a Job Object that kills every process in it when its last handle
// closes: when contain closes it, or when contain ends however it ends
// (TerminateProcess, a crash), since only contain holds it. The handle is
// never inheritable, and BREAKAWAY_OK is never set, so nothing in the job
// can leave it.
type job struct{ h windows.Handle }

func newJob() (*job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("cannot make the job object kill on close: %w", err)
	}
	return &job{h: h}, nil
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                     int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount                                uint32
	TotalProcesses, ActiveProcesses                    uint32
	TotalTerminatedProcesses                           uint32
}

// accounting reads the job's basic accounting.
func (j *job) accounting() (jobAccounting, error) {
	var acc jobAccounting
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acc)), uint32(unsafe.Sizeof(acc)), nil)
	return acc, err
}

// cpu is the CPU time, user and kernel, of every process that ran in the
// job, those that ended included.
func (acc jobAccounting) cpu() time.Duration {
	return time.Duration(acc.TotalUserTime+acc.TotalKernelTime) * 100
}

// active counts the live processes of the job; an error counts as some, so
// that contain never returns early.
func (j *job) active() (int, error) {
	acc, err := j.accounting()
	if err != nil {
		return 1, err
	}
	return int(acc.ActiveProcesses), nil
}

// limit sets the job's memory limit (JobMemoryLimit: the committed memory
// of all its processes; an allocation past it fails) and its limit on
// processes alive at once (a process start past it fails); 0 sets none.
// Kill on close stays.
func (j *job) limit(memory uint64, procs int) error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
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

// capCPU holds the job to cpus CPUs' worth of cycles (Windows 8 and
// later): a hard cap, the job's threads are not scheduled once it is used
// up in a scheduling interval.
func (j *job) capCPU(cpus float64) error {
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

// peakMemory is the most memory the job's processes had committed at once.
func (j *job) peakMemory() (uint64, error) {
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&ext)), uint32(unsafe.Sizeof(ext)), nil)
	return uint64(ext.PeakJobMemoryUsed), err
}

// The job's messages that contain reads from its completion port
// (JOB_OBJECT_MSG_*, which x/sys does not declare).
const (
	jobMsgActiveProcessLimit = 3  // a process start was refused by ActiveProcessLimit
	jobMsgJobMemoryLimit     = 10 // an allocation was refused by JobMemoryLimit; the overlapped value is the PID
)

// notifications associates a new completion port with the job, which
// then posts its messages to it (key 1). Windows promises delivery only
// for notification limits: should a memory-limit message be lost, the
// failed allocation is COMMAND's to handle, and the run ends as COMMAND
// does.
func (j *job) notifications() (windows.Handle, error) {
	port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return 0, err
	}
	assoc := struct {
		CompletionKey  uintptr
		CompletionPort windows.Handle
	}{1, port}
	if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectAssociateCompletionPortInformation,
		uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err != nil {
		windows.CloseHandle(port)
		return 0, err
	}
	return port, nil
}

// pids lists the processes of the job (for what -v says; nothing is
// signalled by these PIDs).
func (j *job) pids() []int {
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

func (j *job) terminate() error { return windows.TerminateJobObject(j.h, proc.TerminateCode) }

func (j *job) close() { windows.CloseHandle(j.h) }

// startInJob starts cmd suspended in a new console process group, puts it
// into j, lets it handle Ctrl-C again, and only then lets it run: no
// instruction of it runs outside the job. It returns a handle of its own
// to the process.
func startInJob(cmd *exec.Cmd, j *job, log Logger) (windows.Handle, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP}
	if err := cmd.Start(); err != nil {
		return 0, &StartError{Name: cmd.Args[0], Err: err}
	}
	var h windows.Handle
	var err error
	cmd.Process.WithHandle(func(ph uintptr) {
		self := windows.CurrentProcess()
		err = windows.DuplicateHandle(self, windows.Handle(ph), self, &h, 0, false, windows.DUPLICATE_SAME_ACCESS)
	})
	if err == nil {
		if err = windows.AssignProcessToJobObject(j.h, h); err != nil {
			err = fmt.Errorf("cannot put %s into the job object: %w (is contain inside a job that forbids nested jobs?)", cmd.Args[0], err)
		}
	}
	if err == nil {
		if cerr := enableCtrlC(h); cerr != nil {
			log("cannot let the command handle Ctrl-C: %v (it will ignore Ctrl-C, as in a new process group)", cerr)
		}
		if err = proc.Resume(h); err != nil {
			err = fmt.Errorf("cannot resume %s: %w", cmd.Args[0], err)
		}
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		if h != 0 {
			windows.CloseHandle(h)
		}
		return 0, err
	}
	return h, nil
}

// enableCtrlC clears, in a suspended process's parameters, the flag by
// which CREATE_NEW_PROCESS_GROUP makes it (and its children) ignore
// Ctrl-C: the console reads it when the process starts. A new process group
// is what lets contain send CTRL_BREAK to COMMAND alone; with the flag
// cleared, a Ctrl-C typed at the console still reaches COMMAND as it would
// without contain.
func enableCtrlC(h windows.Handle) error {
	params, err := proc.ProcessParameters(h)
	if err != nil {
		return err
	}
	var zero uint32
	var pp windows.RTL_USER_PROCESS_PARAMETERS
	return windows.WriteProcessMemory(h, params+unsafe.Offsetof(pp.ConsoleFlags), (*byte)(unsafe.Pointer(&zero)), 4, nil)
}
