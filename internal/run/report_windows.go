package run

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

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
	for _, pid := range r.job.PIDs() {
		h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ|windows.SYNCHRONIZE, false, uint32(pid))
		if err != nil {
			continue // gone already
		}
		l := &winLeftover{h: h, out: report.Leftover{PID: pid, Comm: imageName(h), Argv: []string{}, FoundBy: "job",
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

// winEnded is a process contain ended (an event to its console process
// group, the job terminated), held by a handle until the report knows
// how it ended.
type winEnded struct {
	h   windows.Handle
	out report.Ended
}

// noteEnding records, in the main loop's phase, that contain ends pid
// by how ("CTRL_BREAK_EVENT", "TerminateJobObject"), and returns its
// name, for -v ("?" when it cannot be opened: gone).
func (r *winRunner) noteEnding(pid int, how string) string {
	for _, e := range r.ended {
		if e.out.PID == pid {
			if ev, _ := windows.WaitForSingleObject(e.h, 0); ev != windows.WAIT_OBJECT_0 {
				e.out.Signal = how
				return e.out.Comm
			}
		}
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return "?"
	}
	name := imageName(h)
	if r.facts == nil || r.phase == "" {
		windows.CloseHandle(h)
		return name
	}
	e := &winEnded{h: h, out: report.Ended{PID: pid, Comm: name, Command: pid == r.cmd.Process.Pid, Phase: r.phase, Signal: how}}
	if _, cmdline, err := proc.ReadEnvironment(h); err == nil {
		if argv, err := windows.DecomposeCommandLine(cmdline); err == nil {
			e.out.Argv = argv
		}
	}
	if start, _, err := proc.CreationTime(h); err == nil {
		e.out.Started = &report.Time{Time: proc.FiletimeToTime(start)}
	}
	r.ended = append(r.ended, e)
	return name
}

// noteGroupEnding records the processes of the job in COMMAND's console
// process group, which a console event (how) is about to reach, and
// says them for -v: " (123 (cmd.exe), 456 (ping.exe))".
func (r *winRunner) noteGroupEnding(how string) string {
	gid := uint32(r.cmd.Process.Pid)
	var names []string
	for _, pid := range r.job.PIDs() {
		if g, err := proc.ProcessGroup(pid); err == nil && g == gid {
			names = append(names, fmt.Sprintf("%d (%s)", pid, r.noteEnding(pid, how)))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// named is each PID with its name: "123 (ping.exe)".
func (r *winRunner) named(pids []int) []string {
	out := make([]string, len(pids))
	for i, pid := range pids {
		name := "?"
		if h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid)); err == nil {
			name = imageName(h)
			windows.CloseHandle(h)
		}
		out[i] = fmt.Sprintf("%d (%s)", pid, name)
	}
	return out
}

// imageName is the name of process h's executable ("ping.exe"); "?"
// when it cannot be read.
func imageName(h windows.Handle) string {
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil || n == 0 {
		return "?"
	}
	return filepath.Base(windows.UTF16ToString(buf[:n]))
}

// endedFacts is what became of each process contain ended: the event's
// name, then its exit code; TerminateJobObject; or still running.
func (r *winRunner) endedFacts() []report.Ended {
	var out []report.Ended
	for _, e := range r.ended {
		o := e.out
		if ev, _ := windows.WaitForSingleObject(e.h, 0); ev != windows.WAIT_OBJECT_0 {
			o.EndedBy = "still running"
		} else if o.Signal == "TerminateJobObject" {
			o.EndedBy = o.Signal
		} else {
			var code uint32
			windows.GetExitCodeProcess(e.h, &code)
			o.EndedBy = fmt.Sprintf("%s, then exited %d", o.Signal, code)
		}
		windows.CloseHandle(e.h)
		out = append(out, o)
	}
	r.ended = nil
	return out
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
	f.EndedByContain = r.endedFacts()
	res := &f.Resources
	res.Sources, res.Absent = map[string]string{}, map[string]string{}
	if acc, err := r.job.IOAccounting(); err != nil {
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
	if peak, one, err := r.job.PeakMemory(); err == nil && peak > 0 {
		res.PeakMemoryBytes = report.Ptr(peak)
		res.Sources["peak_memory_bytes"] = "job accounting (PeakJobMemoryUsed: committed memory)"
		res.MaxProcessRSSBytes = report.Ptr(one)
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
