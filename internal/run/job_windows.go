package run

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// Calls x/sys does not wrap.
var (
	kernel32                       = windows.NewLazySystemDLL("kernel32.dll")
	procSetConsoleCtrlHandler      = kernel32.NewProc("SetConsoleCtrlHandler")
	procPostQueuedCompletionStatus = kernel32.NewProc("PostQueuedCompletionStatus")
)

// job is a Job Object that kills every process in it when its last handle
// closes: when contain closes it, or when contain ends however it ends
// (TerminateProcess, a crash), since only contain holds it. The handle is
// never inheritable. BREAKAWAY_OK is set only for --allow-daemons
// (permitBreakaway): otherwise nothing in the job can leave it.
type job struct {
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

// newJob makes a kill-on-close job object with no name, that only
// contain's user (and SYSTEM and the Administrators) may open (ownerOnly):
// another user cannot reach it by name, nor open it through a handle.
func newJob() (*job, error) {
	sa, err := ownerOnly(jobAllAccess)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	h, err := windows.CreateJobObject(sa, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	j := &job{h: h, flags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE}
	if err := j.setFlags(); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("cannot make the job object kill on close: %w", err)
	}
	return j, nil
}

// setFlags sets the job's limit flags to j.flags, no limit among them.
func (j *job) setFlags() error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = j.flags
	_, err := windows.SetInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	return err
}

// permitBreakaway lets a process of the job start a child outside it
// (CREATE_BREAKAWAY_FROM_JOB, which contain run -d asks for): what
// --allow-daemons needs. Windows then grants it to any process, marked
// as a daemon or not: breakWatch puts back those that are not. Kill on
// close stays, for every process that did not break away.
func (j *job) permitBreakaway() error {
	j.flags |= windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
	if err := j.setFlags(); err != nil {
		j.flags &^= windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
		return err
	}
	return nil
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
// Kill on close (and breakaway, where permitted) stays.
func (j *job) limit(memory uint64, procs int) error {
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
	jobMsgNewProcess         = 6  // a process joined the job; the overlapped value is its PID
	jobMsgJobMemoryLimit     = 10 // an allocation was refused by JobMemoryLimit; the overlapped value is the PID
)

// The completion keys of the job's port: the job's own messages, and the
// packets contain posts to it.
const (
	jobKey      = 1
	portStopKey = 2 // readPort returns
	portFlush   = 3 // every message before it has been handed on
)

// listen associates a completion port with the job, once, and starts
// readPort on it. A job has one port: every reader of its messages goes
// through this one.
func (j *job) listen() error {
	j.portOnce.Do(func() {
		port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
		if err != nil {
			j.portErr = err
			return
		}
		assoc := struct {
			CompletionKey  uintptr
			CompletionPort windows.Handle
		}{jobKey, port}
		if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectAssociateCompletionPortInformation,
			uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err != nil {
			windows.CloseHandle(port)
			j.portErr = err
			return
		}
		j.port, j.portDone = port, make(chan struct{})
		go j.readPort()
	})
	return j.portErr
}

// readPort hands on the job's messages until the stop packet.
func (j *job) readPort() {
	defer close(j.portDone)
	for {
		var msg uint32
		var key, value uintptr
		ok, _, _ := procGetQueuedCompletionStatus.Call(uintptr(j.port), uintptr(unsafe.Pointer(&msg)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), windows.INFINITE)
		if ok == 0 && value == 0 {
			return // the port is gone
		}
		j.mu.Lock()
		switch {
		case key == portStopKey:
			j.mu.Unlock()
			return
		case key == portFlush:
			j.fwd = 0
			close(j.flushed)
		case msg == jobMsgNewProcess:
			if j.onNew != nil {
				j.onNew(int(value))
			}
		case msg == jobMsgJobMemoryLimit || msg == jobMsgActiveProcessLimit:
			if j.fwd != 0 {
				procPostQueuedCompletionStatus.Call(uintptr(j.fwd), uintptr(msg), key, value)
			}
		}
		j.mu.Unlock()
	}
}

// post puts a packet of contain's own on the job's port.
func (j *job) post(key uintptr) {
	procPostQueuedCompletionStatus.Call(uintptr(j.port), 0, key, 0)
}

// watchNew has f called with the PID of each process that joins the job
// from now on, from the port's reader, as soon as the job says so.
func (j *job) watchNew(f func(pid int)) error {
	if err := j.listen(); err != nil {
		return err
	}
	j.mu.Lock()
	j.onNew = f
	j.mu.Unlock()
	return nil
}

// notifications returns a new completion port to which the job's
// messages on its limits (memory, processes) are handed on (key 1):
// Windows promises delivery only for notification limits, so should a
// memory-limit message be lost, the failed allocation is COMMAND's to
// handle, and the run ends as COMMAND does. Its reader stops reading
// it after unforward, and closes it.
func (j *job) notifications() (windows.Handle, error) {
	if err := j.listen(); err != nil {
		return 0, err
	}
	fwd, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return 0, err
	}
	j.mu.Lock()
	j.fwd = fwd
	j.mu.Unlock()
	return fwd, nil
}

// unforward hands on every limit message the job posted so far, then no
// more: the port notifications returned may then be closed.
func (j *job) unforward() {
	j.mu.Lock()
	if j.fwd == 0 || j.flushed != nil {
		j.mu.Unlock()
		return
	}
	j.flushed = make(chan struct{})
	j.mu.Unlock()
	j.post(portFlush)
	select {
	case <-j.flushed:
	case <-j.portDone:
	}
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

// close stops the port's reader and closes the job, which ends whatever
// is left in it.
func (j *job) close() {
	if j.port != 0 {
		j.post(portStopKey)
		<-j.portDone
		windows.CloseHandle(j.port)
	}
	windows.CloseHandle(j.h)
}

// startInJob starts cmd suspended in a new console process group, puts it
// into j, lets it handle Ctrl-C again, and only then lets it run: no
// instruction of it runs outside the job. It returns a handle of its own
// to the process.
func startInJob(cmd *exec.Cmd, j *job, log Logger) (windows.Handle, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP
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

// breakWatch holds --allow-daemons to its word on Windows. The job then
// permits breakaway (CREATE_BREAKAWAY_FROM_JOB), which Windows grants to
// any process of it, marked as a daemon or not; only those that carry
// RUNNING_PROCESS_IS_DAEMON=1 when contain first sees them may stay out.
// Every breakawayEvery it lists the job's processes and takes one
// snapshot of the system's (PID, parent, creation time): a process
// outside the job whose parent is, or was, a process of the job (by PID,
// created no earlier than that parent) left it. Marked, it is spared and
// recorded; not marked, it is put back into the job, or terminated if
// that fails. Its verdict is kept: a process that rewrites its
// environment later changes nothing.
//
// Each process of the job is held open from when contain learns of it
// (from the job's port as it joins, or from the job's list) until a
// snapshot taken after it ended has been read: its PID cannot name
// another process meanwhile, so the parent test is exact, even for a
// parent that ended at once (contain run -d does). A process outside the
// job whose parent is gone carries the session's tag if it came from the
// job: that catches the child of an escapee that ended unseen. Spared
// daemons and their descendants are held open and left alone.
type breakWatch struct {
	job  *job
	log  Logger
	tag  string // the session's tag value
	cmd  int    // COMMAND's PID, its console process group
	keep bool   // record the spared daemons for the report

	mu      sync.Mutex        // all below; the job's port adds members
	since   int64             // FILETIME: the job was made; older processes are not its
	members map[int]*heldProc // processes of the job, or put back into it, held open
	outside map[int]*heldProc // spared daemons and their descendants, held open
	judged  map[procKey]bool
	spared  []report.Leftover
	caught  []caught
	snap    []uint64
	acted   int // processes put back or terminated
	pending int // processes of the last look that could not be decided on yet

	running       bool // loop was started
	stop, stopped chan struct{}
	finished      sync.Once
}

// heldProc is a process held open by breakWatch (no kin of the Unix
// runner's member, a process as a scan saw it).
type heldProc struct {
	h       windows.Handle
	created int64
	ended   bool // seen ended before the last snapshot: closed after it is read
}

// breakawayEvery is how often breakWatch looks (less often when a look
// takes more than a twentieth of it). Under Wine 8, with 75 processes on
// the machine, a look costs contain 1.5 ms of CPU (0.75 ms of it the
// system snapshot), and wineserver about as much.
const breakawayEvery = 100 * time.Millisecond

// envWait is how long after its creation a process whose environment
// cannot be read yet is waited for: a process is judged by its
// environment when it is first readable. Wine starts a process before
// its parameters are written (seen: NtQueryInformationProcess then calls
// it a WOW64 process, and the snapshot gives no image name); Windows
// writes them first. Past it, an unreadable process counts as unmarked.
const envWait = 2 * time.Second

// watchBreakaway starts breakWatch over j, which already permits breakaway.
func watchBreakaway(j *job, log Logger, tag string, keep bool) *breakWatch {
	b := &breakWatch{job: j, log: log, tag: tag, keep: keep,
		members: map[int]*heldProc{}, outside: map[int]*heldProc{}, judged: map[procKey]bool{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	b.since = fileNow() - int64(time.Second/100) // a second's slack
	if err := j.watchNew(b.joined); err != nil {
		log("--allow-daemons: cannot read the job's messages (%v): processes that join it and end within %v are not known, nor the children they start outside it, unless these carry the session's tag", err, breakawayEvery)
	}
	return b
}

// begin starts looking, once COMMAND runs (pid).
func (b *breakWatch) begin(pid int) {
	b.cmd, b.running = pid, true
	go b.loop()
}

func (b *breakWatch) loop() {
	defer close(b.stopped)
	t := time.NewTimer(breakawayEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		began := time.Now()
		b.scan(false)
		t.Reset(max(breakawayEvery, 20*time.Since(began)))
	}
}

// joined holds a process the job says joined it, at once: it may start a
// child outside the job and end within a look's interval.
func (b *breakWatch) joined(pid int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.members[pid]; ok {
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return // ended, and no one holds it: it can be no one's parent any more
	}
	created, _, err := proc.CreationTime(h)
	if err != nil {
		windows.CloseHandle(h)
		return
	}
	b.members[pid] = &heldProc{h: h, created: int64(created)}
}

// scan looks once: the job's list, the members that ended, the system's
// processes. final: COMMAND's job is closed, so a process that left it
// unmarked is terminated rather than put back.
func (b *breakWatch) scan(final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = 0
	now := fileNow()
	for _, m := range b.members {
		if unknown(m.created, now) {
			if c, _, err := proc.CreationTime(m.h); err == nil {
				m.created = int64(c)
			}
		}
	}
	in := map[int]bool{}
	for _, pid := range b.job.pids() {
		in[pid] = true
		if _, ok := b.members[pid]; !ok {
			b.addMember(pid)
		}
	}
	for pid, m := range b.members {
		if !in[pid] && !m.ended {
			if ev, _ := windows.WaitForSingleObject(m.h, 0); ev == windows.WAIT_OBJECT_0 {
				m.ended = true
			}
		}
	}
	procs, err := systemProcesses(&b.snap)
	if err != nil {
		b.log("--allow-daemons: cannot list the system's processes: %v", err)
		return
	}
	alive := make(map[int]int64, len(procs))
	var fresh []sysProc // what this look may have to decide on
	for _, p := range procs {
		alive[p.pid] = p.created
		switch {
		case unknown(p.created, now):
			if _, ok := b.members[p.ppid]; ok {
				b.pending++ // starting (under Wine): looked at again next time
			}
		case p.created >= b.since && !in[p.pid] && !b.judged[procKey{p.pid, p.created}]:
			fresh = append(fresh, p)
		}
	}
	// Oldest first: an escapee is decided on before its children.
	slices.SortFunc(fresh, func(a, c sysProc) int { return cmp.Compare(a.created, c.created) })
	for _, p := range fresh {
		k := procKey{p.pid, p.created}
		if m, ok := b.members[p.pid]; ok && m.created == p.created {
			continue
		}
		if m, ok := b.outside[p.pid]; ok && m.created == p.created {
			continue
		}
		if m, ok := b.outside[p.ppid]; ok && m.created <= p.created {
			b.judged[k] = true // a spared daemon's: its business
			b.hold(b.outside, p, windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE)
			continue
		}
		m, child := b.members[p.ppid]
		if child && unknown(m.created, now) {
			b.pending++ // its parent's creation time is not known yet
			continue
		}
		child = child && m.created <= p.created
		orphan := false
		if pc, ok := alive[p.ppid]; !ok || pc > p.created {
			orphan = true // its parent is gone: its tag may tell
		}
		if !child && !orphan {
			b.judged[k] = true
			continue
		}
		b.judge(p, child, final, now)
	}
	if b.pending == 0 {
		// Every child of an ended member that is still alive was in
		// this snapshot, and was decided on.
		for pid, m := range b.members {
			if m.ended {
				windows.CloseHandle(m.h)
				delete(b.members, pid)
			}
		}
	}
	for k := range b.judged {
		if c, ok := alive[k.pid]; !ok || c != k.created {
			delete(b.judged, k)
		}
	}
}

// addMember holds a process of the job's list.
func (b *breakWatch) addMember(pid int) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return
	}
	created, _, err := proc.CreationTime(h)
	if err != nil || !inJob(h, b.job) {
		windows.CloseHandle(h) // ended, and its PID given to another process
		return
	}
	b.members[pid] = &heldProc{h: h, created: int64(created)}
}

// hold opens p and holds it in set, if it is still p.
func (b *breakWatch) hold(set map[int]*heldProc, p sysProc, access uint32) {
	h, err := windows.OpenProcess(access, false, uint32(p.pid))
	if err != nil {
		return
	}
	if created, _, err := proc.CreationTime(h); err != nil || int64(created) != p.created {
		windows.CloseHandle(h)
		return
	}
	if old, ok := set[p.pid]; ok {
		windows.CloseHandle(old.h)
	}
	set[p.pid] = &heldProc{h: h, created: p.created}
}

// judge decides on p, outside the job: child, its parent is a process of
// the job; else its parent is gone, and p is the job's only if it
// carries the session's tag.
func (b *breakWatch) judge(p sysProc, child, final bool, now int64) {
	k := procKey{p.pid, p.created}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION|windows.PROCESS_VM_READ|windows.PROCESS_SET_QUOTA|
		windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, uint32(p.pid))
	if err != nil {
		b.judged[k] = true
		if child && !errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			b.log("--allow-daemons: cannot open %d (%s), which left the job: %v", p.pid, p.name(), err)
		}
		return
	}
	created, _, err := proc.CreationTime(h)
	if err != nil || int64(created) != p.created {
		windows.CloseHandle(h) // ended since the snapshot; its PID is another's
		return
	}
	if inJob(h, b.job) {
		b.members[p.pid] = &heldProc{h: h, created: p.created} // joined since the job's list was read
		return
	}
	env, cmdline, envErr := proc.ReadEnvironment(h)
	if envErr != nil && now-p.created < int64(envWait/100) {
		// Under Wine a new process writes its own parameters, after it
		// is seen: no verdict before its environment can be read. Its
		// parent, seen now, may be gone by then.
		windows.CloseHandle(h)
		b.pending++
		return
	}
	if !child {
		if envErr != nil || envValue(env, tag.Var) != b.tag {
			windows.CloseHandle(h)
			b.judged[k] = true
			return
		}
	}
	b.judged[k] = true
	name := p.name()
	if argv, err := windows.DecomposeCommandLine(cmdline); name == "?" && err == nil && len(argv) > 0 {
		name = filepath.Base(argv[0])
	}
	if envErr == nil && envValue(env, tag.DaemonVar) == "1" {
		b.log("sparing daemon %d (%s): marked %s=1 (--allow-daemons)", p.pid, name, tag.DaemonVar)
		b.outside[p.pid] = &heldProc{h: h, created: p.created}
		if b.keep {
			b.spared = append(b.spared, b.sparedLeftover(p, cmdline, child))
		}
		return
	}
	mark := "without " + tag.DaemonVar + "=1"
	if envErr != nil {
		mark = fmt.Sprintf("and its environment cannot be read (%v)", envErr)
	}
	b.acted++
	b.members[p.pid] = &heldProc{h: h, created: p.created} // its children are the job's too
	how := "TerminateJobObject (put back into the job)"
	switch err := b.putBack(h, final); {
	case err == nil:
		b.log("%d (%s) left the job %s: put it back into the job (--allow-daemons spares only marked processes)", p.pid, name, mark)
	case final:
		b.log("%d (%s) left the job %s: terminating it (--allow-daemons spares only marked processes)", p.pid, name, mark)
	default:
		b.log("%d (%s) left the job %s, and cannot be put back into it (%v): terminating it", p.pid, name, mark, err)
	}
	if !inJob(h, b.job) {
		how = "TerminateProcess (left the job unmarked)"
		if err := windows.TerminateProcess(h, proc.TerminateCode); err != nil {
			b.log("cannot terminate %d (%s): %v", p.pid, name, err)
		}
	}
	if b.keep {
		var dup windows.Handle
		self := windows.CurrentProcess()
		if windows.DuplicateHandle(self, h, self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS) == nil {
			l := b.leftover(p, cmdline, child)
			l.EndedBy = how
			b.caught = append(b.caught, caught{h: dup, out: l})
		}
	}
}

// errClosed: the job is closed; nothing is put back into it any more.
var errClosed = errors.New("the job is closed")

// putBack puts process h back into the job, unless it is closed (final).
func (b *breakWatch) putBack(h windows.Handle, final bool) error {
	if final {
		return errClosed
	}
	return windows.AssignProcessToJobObject(b.job.h, h)
}

// envValue is key's value in env ("" : none).
func envValue(env []string, key string) string {
	v, _ := tag.Lookup(env, key)
	return v
}

// caught is a process that left the job unmarked, for the report.
type caught struct {
	h   windows.Handle
	out report.Leftover
}

// sparedLeftover is what the report says of a spared daemon.
func (b *breakWatch) sparedLeftover(p sysProc, cmdline string, child bool) report.Leftover {
	l := b.leftover(p, cmdline, child)
	l.EndedBy, l.Daemon, l.Spared = "spared (--allow-daemons)", true, true
	return l
}

// leftover is what the report says of a process that left the job.
func (b *breakWatch) leftover(p sysProc, cmdline string, child bool) report.Leftover {
	l := report.Leftover{PID: p.pid, Argv: []string{}, FoundBy: "descendant",
		Started: &report.Time{Time: proc.FiletimeToTime(uint64(p.created))},
		Absent: map[string]string{
			"left_session": "Windows has no sessions of this kind",
			"held_stdout":  "not read on Windows",
			"held_stderr":  "not read on Windows",
		}}
	if !child {
		l.FoundBy = "tag"
	}
	if argv, err := windows.DecomposeCommandLine(cmdline); err == nil && cmdline != "" {
		l.Argv = argv
	}
	if g, err := proc.ProcessGroup(p.pid); err == nil {
		l.LeftProcessGroup = report.Ptr(g != uint32(b.cmd))
	}
	return l
}

// finish stops looking, once the job is closed, and looks again until a
// look finds nothing to end: a process that left the job unmarked while
// it closed is terminated. It returns, for the report, the spared
// daemons and the processes that left the job unmarked (those not
// ended yet are "still running"), and closes every handle it held.
func (b *breakWatch) finish() []report.Leftover {
	b.finished.Do(func() {
		b.job.watchNew(nil)
		if b.running {
			close(b.stop)
			<-b.stopped
			// Until a look finds nothing to end or wait for, and
			// at most envWait and a second.
			for deadline := time.Now().Add(envWait + time.Second); ; {
				before := b.acted
				b.scan(true)
				if b.acted == before && b.pending == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(breakawayEvery)
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.caught {
			if ev, _ := windows.WaitForSingleObject(c.h, 1000); ev != windows.WAIT_OBJECT_0 {
				c.out.EndedBy = "still running"
			}
			windows.CloseHandle(c.h)
			b.spared = append(b.spared, c.out)
		}
		b.caught = nil
		for _, set := range []map[int]*heldProc{b.members, b.outside} {
			for pid, m := range set {
				windows.CloseHandle(m.h)
				delete(set, pid)
			}
		}
	})
	return b.spared
}

// fileNow is the time now as a FILETIME.
func fileNow() int64 {
	var ft windows.Filetime
	windows.GetSystemTimeAsFileTime(&ft)
	return int64(uint64(ft.HighDateTime)<<32 | uint64(ft.LowDateTime))
}

// unknown reports whether a creation time (FILETIME) is not one yet:
// Wine gives 0x5555555555555555 for a process that has not finished
// starting (seen with Wine 8, in the system snapshot and from
// GetProcessTimes), later its real time.
func unknown(created, now int64) bool {
	return created <= 0 || created > now+int64(time.Minute/100)
}

// inJob reports whether process h (opened with PROCESS_QUERY_INFORMATION,
// which Wine needs) is in j.
func inJob(h windows.Handle, j *job) bool {
	var in int32
	ok, _, _ := procIsProcessInJob.Call(uintptr(h), uintptr(j.h), uintptr(unsafe.Pointer(&in)))
	return ok != 0 && in != 0
}

// sysProc is one process of a system snapshot.
type sysProc struct {
	pid, ppid int
	created   int64 // FILETIME
	img       windows.NTUnicodeString
}

// name is its executable's name; valid until the next snapshot.
func (p sysProc) name() string {
	if p.img.Length == 0 {
		return "?"
	}
	return p.img.String()
}

// systemProcesses lists every process, its parent and its creation time,
// from one NtQuerySystemInformation(SystemProcessInformation), read into
// *buf (grown as needed).
func systemProcesses(buf *[]uint64) ([]sysProc, error) {
	for try := 0; ; try++ {
		if len(*buf) == 0 {
			*buf = make([]uint64, 32<<10) // 256 KiB, 8-byte aligned
		}
		var n uint32
		err := windows.NtQuerySystemInformation(windows.SystemProcessInformation, unsafe.Pointer(&(*buf)[0]), uint32(len(*buf)*8), &n)
		if errors.Is(err, windows.STATUS_INFO_LENGTH_MISMATCH) && try < 4 {
			*buf = make([]uint64, max(int(n)/8+8<<10, 2*len(*buf)))
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	var out []sysProc
	b := unsafe.Slice((*byte)(unsafe.Pointer(&(*buf)[0])), len(*buf)*8)
	for off := 0; off+int(unsafe.Sizeof(windows.SYSTEM_PROCESS_INFORMATION{})) <= len(b); {
		p := (*windows.SYSTEM_PROCESS_INFORMATION)(unsafe.Pointer(&b[off]))
		out = append(out, sysProc{pid: int(p.UniqueProcessID), ppid: int(p.InheritedFromUniqueProcessID), created: p.CreateTime, img: p.ImageName})
		if p.NextEntryOffset == 0 {
			break
		}
		off += int(p.NextEntryOffset)
	}
	return out, nil
}
