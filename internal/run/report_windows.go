package run

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// winLeftover is a process of the job alive when COMMAND ended, held by a
// handle until the report knows how it ended.
type winLeftover struct {
	h    windows.Handle
	out  report.Leftover
	done bool
}

// noteLeftovers records the processes of the job when COMMAND has ended.
func (r *winRunner) noteLeftovers() {
	if r.facts == nil {
		return
	}
	for _, pid := range r.job.pids() {
		h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ|windows.SYNCHRONIZE, false, uint32(pid))
		if err != nil {
			continue // gone already
		}
		l := &winLeftover{h: h, out: report.Leftover{PID: pid, Argv: []string{}, FoundBy: "job",
			Absent: map[string]string{
				"left_session": "Windows has no sessions of this kind",
				"held_stdout":  "not read on Windows",
				"held_stderr":  "not read on Windows",
			}}}
		if start, _, err := proc.CreationTime(h); err == nil {
			l.out.Started = &report.Time{Time: proc.FiletimeToTime(start)}
		}
		if _, cmdline, err := proc.ReadEnvironment(h); err == nil {
			if argv, err := windows.DecomposeCommandLine(cmdline); err == nil {
				l.out.Argv = argv
			}
		}
		if g, err := proc.ProcessGroup(pid); err == nil {
			l.out.LeftProcessGroup = report.Ptr(g != uint32(r.cmd.Process.Pid))
		}
		r.left = append(r.left, l)
	}
}

// noteGone records the end of each leftover that has ended, by what
// contain did last (how, "" : nothing yet).
func (r *winRunner) noteGone(how string) {
	if r.facts == nil {
		return
	}
	for _, l := range r.left {
		if l.done {
			continue
		}
		if ev, _ := windows.WaitForSingleObject(l.h, 0); ev != windows.WAIT_OBJECT_0 {
			continue
		}
		l.done = true
		l.out.EndedAfterSeconds = report.Seconds(time.Since(r.facts.CommandEnded))
		l.out.EndedBy = how
		if how == "" {
			var code uint32
			windows.GetExitCodeProcess(l.h, &code)
			l.out.EndedBy = fmt.Sprintf("exited %d", code)
		}
	}
}

// jobIOAccounting is JOBOBJECT_BASIC_AND_IO_ACCOUNTING_INFORMATION.
type jobIOAccounting struct {
	Basic jobAccounting
	IO    windows.IO_COUNTERS
}

// finishFacts completes the facts from the job's accounting, before the
// job is closed.
func (r *winRunner) finishFacts() *Facts {
	f := r.facts
	if f == nil {
		return nil
	}
	f.Ended = time.Now()
	r.noteGone("")
	for _, l := range r.left {
		if !l.done {
			l.out.EndedBy = "still running"
		}
		windows.CloseHandle(l.h)
		f.Leftovers = append(f.Leftovers, l.out)
	}
	res := &f.Resources
	res.Sources, res.Absent = map[string]string{}, map[string]string{}
	var acc jobIOAccounting
	if err := windows.QueryInformationJobObject(r.job.h, windows.JobObjectBasicAndIoAccountingInformation,
		uintptr(unsafe.Pointer(&acc)), uint32(unsafe.Sizeof(acc)), nil); err != nil {
		why := fmt.Sprintf("the job's accounting cannot be read: %v", err)
		for _, f := range []string{"cpu_user_seconds", "cpu_system_seconds", "io_read_bytes", "io_write_bytes", "peak_processes"} {
			res.Absent[f] = why
		}
	} else {
		const tick = 100 * time.Nanosecond
		user, kernel := time.Duration(acc.Basic.TotalUserTime)*tick, time.Duration(acc.Basic.TotalKernelTime)*tick
		switch {
		case user == 0 && kernel == 0 && underWine():
			res.Absent["cpu_user_seconds"] = "Wine does not account a job's CPU time"
			res.Absent["cpu_system_seconds"] = res.Absent["cpu_user_seconds"]
		default:
			res.CPUUserSeconds, res.CPUSystemSeconds = report.Seconds(user), report.Seconds(kernel)
			res.Sources["cpu"] = "job accounting (JOBOBJECT_BASIC_AND_IO_ACCOUNTING_INFORMATION)"
		}
		if acc.IO.ReadTransferCount == 0 && acc.IO.WriteTransferCount == 0 && underWine() {
			res.Absent["io_read_bytes"] = "Wine does not account a job's I/O"
			res.Absent["io_write_bytes"] = res.Absent["io_read_bytes"]
		} else {
			res.IOReadBytes, res.IOWriteBytes = report.Ptr(acc.IO.ReadTransferCount), report.Ptr(acc.IO.WriteTransferCount)
			res.Sources["io"] = "job accounting (JOBOBJECT_BASIC_AND_IO_ACCOUNTING_INFORMATION)"
		}
		res.Absent["peak_processes"] = fmt.Sprintf("Windows counts a job's processes in total (%d), not at their peak", acc.Basic.TotalProcesses)
	}
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(r.job.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&ext)), uint32(unsafe.Sizeof(ext)), nil); err == nil && ext.PeakJobMemoryUsed > 0 {
		res.PeakMemoryBytes = report.Ptr(uint64(ext.PeakJobMemoryUsed))
		res.Sources["peak_memory_bytes"] = "job accounting (PeakJobMemoryUsed: committed memory)"
		res.MaxProcessRSSBytes = report.Ptr(uint64(ext.PeakProcessMemoryUsed))
		res.Sources["max_process_rss_bytes"] = "job accounting (PeakProcessMemoryUsed: committed memory)"
	} else {
		why := "the job's peak memory cannot be read"
		if err == nil {
			why = "the job reports no peak memory (Wine does not account it)"
		}
		res.Absent["peak_memory_bytes"], res.Absent["max_process_rss_bytes"] = why, why
	}
	return f
}
