package job

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// BreakWatch holds --allow-daemons to its word on Windows. The job then
// permits breakaway (CREATE_BREAKAWAY_FROM_JOB), which Windows grants to
// any process of it, marked as a daemon or not; only those that carry
// RUNNING_PROCESS_IS_DAEMON=1 when contain first sees them may stay out.
// Every BreakawayEvery it lists the job's processes and takes one
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
type BreakWatch struct {
	job  *Job
	log  func(format string, a ...any)
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

// heldProc is a process held open by BreakWatch (no kin of
// internal/run's Unix member, a process as a scan saw it).
type heldProc struct {
	h       windows.Handle
	created int64
	ended   bool // seen ended before the last snapshot: closed after it is read
}

// BreakawayEvery is how often BreakWatch looks (less often when a look
// takes more than a twentieth of it). Under Wine 8, with 75 processes on
// the machine, a look costs contain 1.5 ms of CPU (0.75 ms of it the
// system snapshot), and wineserver about as much.
const BreakawayEvery = 100 * time.Millisecond

// envWait is how long after its creation a process whose environment
// cannot be read yet is waited for: a process is judged by its
// environment when it is first readable. Wine starts a process before
// its parameters are written (seen: NtQueryInformationProcess then calls
// it a WOW64 process, and the snapshot gives no image name); Windows
// writes them first. Past it, an unreadable process counts as unmarked.
const envWait = 2 * time.Second

// WatchBreakaway starts a BreakWatch over j, which already permits
// breakaway (PermitBreakaway), for the session whose tag value is tag:
// log says what it does; keep records, for the report (Finish), the
// spared daemons and the processes it caught.
func WatchBreakaway(j *Job, log func(format string, a ...any), tag string, keep bool) *BreakWatch {
	b := &BreakWatch{job: j, log: log, tag: tag, keep: keep,
		members: map[int]*heldProc{}, outside: map[int]*heldProc{}, judged: map[procKey]bool{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	b.since = fileNow() - int64(time.Second/100) // a second's slack
	if err := j.watchNew(b.joined); err != nil {
		log("--allow-daemons: cannot read the job's messages (%v): processes that join it and end within %v are not known, nor the children they start outside it, unless these carry the session's tag", err, BreakawayEvery)
	}
	return b
}

// Begin starts looking, once COMMAND runs (pid).
func (b *BreakWatch) Begin(pid int) {
	b.cmd, b.running = pid, true
	go b.loop()
}

func (b *BreakWatch) loop() {
	defer close(b.stopped)
	t := time.NewTimer(BreakawayEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		began := time.Now()
		b.scan(false)
		t.Reset(max(BreakawayEvery, 20*time.Since(began)))
	}
}

// joined holds a process the job says joined it, at once: it may start a
// child outside the job and end within a look's interval.
func (b *BreakWatch) joined(pid int) {
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
func (b *BreakWatch) scan(final bool) {
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
	for _, pid := range b.job.PIDs() {
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
func (b *BreakWatch) addMember(pid int) {
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
func (b *BreakWatch) hold(set map[int]*heldProc, p sysProc, access uint32) {
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
func (b *BreakWatch) judge(p sysProc, child, final bool, now int64) {
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
	if envErr == nil && daemon.Marked(env) {
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
func (b *BreakWatch) putBack(h windows.Handle, final bool) error {
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
func (b *BreakWatch) sparedLeftover(p sysProc, cmdline string, child bool) report.Leftover {
	l := b.leftover(p, cmdline, child)
	l.EndedBy, l.Daemon, l.Spared = "spared (--allow-daemons)", true, true
	return l
}

// leftover is what the report says of a process that left the job.
func (b *BreakWatch) leftover(p sysProc, cmdline string, child bool) report.Leftover {
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

// Finish stops looking, once the job is closed, and looks again until a
// look finds nothing to end: a process that left the job unmarked while
// it closed is terminated. It returns, for the report, the spared
// daemons and the processes that left the job unmarked (those not
// ended yet are "still running"), and closes every handle it held.
func (b *BreakWatch) Finish() []report.Leftover {
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
				time.Sleep(BreakawayEvery)
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
// which Wine needs) is in j; a failure to tell is no.
func inJob(h windows.Handle, j *Job) bool {
	in, _ := j.Holds(h)
	return in
}

// procKey is a process: its PID and creation time.
type procKey struct {
	pid     int
	created int64
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
