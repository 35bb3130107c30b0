package run

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// openProcess opens pid for the report: its name, command line, start and
// exit code.
func openProcess(pid int) (windows.Handle, error) {
	return windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ|windows.SYNCHRONIZE, false, uint32(pid))
}

// idOf is pid's identity: its PID and creation time.
func idOf(pid int, h windows.Handle) proc.ID {
	start, _, _ := proc.CreationTime(h)
	return proc.ID{PID: pid, Start: start}
}

// ended reports whether the process h has ended.
func ended(h windows.Handle) bool {
	ev, _ := windows.WaitForSingleObject(h, 0)
	return ev == windows.WAIT_OBJECT_0
}

// noteLeftovers records the processes of the job when COMMAND has ended.
func (r *winRunner) noteLeftovers() {
	if !r.rec.Collecting() {
		return // nothing to read for
	}
	pids := r.sys.pids()
	r.readPorts(pids)
	for _, pid := range pids {
		h, err := openProcess(pid)
		if err != nil {
			continue // gone already
		}
		l := &account.Leftover{ID: idOf(pid, h), Ref: h, Out: report.Leftover{PID: pid, Comm: imageName(h), Argv: []string{}, FoundBy: "job",
			Absent: map[string]string{
				"left_session": "Windows has no sessions of this kind",
				"held_stdout":  "not read on Windows",
				"held_stderr":  "not read on Windows",
			}}}
		if l.ID.Start != 0 {
			l.Out.Started = &report.Time{Time: proc.FiletimeToTime(l.ID.Start)}
		}
		if _, cmdline, err := proc.ReadEnvironment(h); err == nil {
			if argv, err := windows.DecomposeCommandLine(cmdline); err == nil {
				l.Out.Argv = argv
			}
		}
		if r.o.Hold {
			l.Out.Absent["left_process_group"] = "a held session (a library Group) has no COMMAND whose process group a process could leave"
		} else if g, err := r.sys.group(pid); err == nil {
			l.Out.LeftProcessGroup = report.Ptr(g != uint32(r.cmd.Process.Pid))
		}
		r.leftPorts.note(pid, &l.Out)
		if !r.rec.AddLeftover(l) {
			windows.CloseHandle(h)
		}
	}
}

// noteEnding records, in the main loop's phase, that contain ends pid
// by how ("CTRL_BREAK_EVENT", "TerminateJobObject"), and returns its
// name, for -v ("?" when it cannot be opened: gone).
func (r *winRunner) noteEnding(pid int, how string) string {
	h, err := openProcess(pid)
	if err != nil {
		return "?"
	}
	name := imageName(h)
	if r.phase == "" {
		windows.CloseHandle(h)
		return name
	}
	id := idOf(pid, h)
	_, made := r.rec.AddEnding(id, how, func() *account.Ending {
		e := &account.Ending{Ref: h, Out: report.Ended{PID: pid, Comm: name, Command: pid == r.cmdPID() && pid != 0, Phase: r.phase}}
		if _, cmdline, err := proc.ReadEnvironment(h); err == nil {
			if argv, err := windows.DecomposeCommandLine(cmdline); err == nil {
				e.Out.Argv = argv
			}
		}
		if id.Start != 0 {
			e.Out.Started = &report.Time{Time: proc.FiletimeToTime(id.Start)}
		}
		return e
	})
	if !made {
		windows.CloseHandle(h)
	}
	return name
}

// noteGroupEnding records the processes of the job in COMMAND's console
// process group, which a console event (how) is about to reach, and
// says them for -v: " (123 (cmd.exe), 456 (ping.exe))".
func (r *winRunner) noteGroupEnding(how string) string {
	gid := uint32(r.cmdPID())
	var names []string
	for _, pid := range r.sys.pids() {
		if g, err := r.sys.group(pid); err == nil && (g == gid || r.o.Hold) {
			names = append(names, fmt.Sprintf("%d (%s)", pid, r.noteEnding(pid, how)))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// named is each PID with its name, and the ports it listens on where
// they were read (readPorts): "123 (ping.exe)", "456 (node.exe,
// listening on :3000)".
func (r *winRunner) named(pids []int) []string {
	out := r.imageNames(pids)
	for i, pid := range pids {
		out[i] = fmt.Sprintf("%d (%s%s)", pid, out[i], r.leftPorts.listening(pid))
	}
	return out
}

// readPorts reads what the processes among pids listen on, once each
// (leftoverPorts).
func (r *winRunner) readPorts(pids []int) { r.leftPorts.read(pids, pids) }

// imageNames are the names of the executables of pids ("?" where one
// cannot be read).
func (r *winRunner) imageNames(pids []int) []string {
	out := make([]string, len(pids))
	for i, pid := range pids {
		out[i] = "?"
		if h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid)); err == nil {
			out[i] = imageName(h)
			windows.CloseHandle(h)
		}
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

// noteGone records the end of each leftover that has ended, by what
// contain did last (how; "": nothing yet, it exited by itself).
func (r *winRunner) noteGone(how string) {
	var gone []events.Leftover
	r.rec.Gone(func(l *account.Leftover) bool {
		if !ended(l.Ref) {
			return false
		}
		l.Signal = how
		if r.o.Events != nil {
			gone = append(gone, events.Leftover{PID: l.Out.PID, Comm: l.Out.Comm, EndedBy: leftEndedBy(l), Ports: l.Out.Ports})
		}
		return true
	})
	for _, e := range gone {
		r.o.Events.Emit(e)
	}
}

// leftEndedBy is how the ended leftover l ended: by what contain did
// last before it was seen gone, else by its exit code.
func leftEndedBy(l *account.Leftover) string {
	if l.Signal != "" {
		return l.Signal
	}
	return fmt.Sprintf("exited %d", exitCode(l.Ref))
}

// exitCode is the exit code of the ended process h.
func exitCode(h windows.Handle) uint32 {
	var code uint32
	windows.GetExitCodeProcess(h, &code)
	return code
}

// finishFacts completes the facts from the job's accounting, before the
// job is closed: a leftover ended by what contain did last before it was
// seen gone, else by its exit code; a process contain ended by the
// event's name, then its exit code, or TerminateJobObject.
func (r *winRunner) finishFacts() *account.Facts {
	rec := r.rec
	if !rec.Collecting() {
		return nil
	}
	r.noteGone("")
	f := rec.Finish(leftEndedBy, func(e *account.Ending) string {
		switch {
		case !ended(e.Ref):
			return account.StillRunning
		case e.Out.Signal == "TerminateJobObject":
			return e.Out.Signal
		default:
			return fmt.Sprintf("%s, then exited %d", e.Out.Signal, exitCode(e.Ref))
		}
	}, func(h windows.Handle) { windows.CloseHandle(h) })
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
