package run

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/job"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// jobLimits is a run's limit enforcer on Windows (limit.Enforcer), over
// the tree as a job object holds it. The job object holds what it can:
// JobMemoryLimit (an allocation past it fails: contain learns of it from
// the job's completion port and ends the tree, as the kernel does on
// Linux), ActiveProcessLimit (a process start past it fails) and the CPU
// rate hard cap; --cpu-time is polled from the job's accounting, which
// counts the processes that ended too. Wine's job objects keep the limits
// but enforce none, and account no CPU time (docs/GUIDE.md, Limits on
// Windows): there contain samples the job's processes every limit.Every,
// and holds --cpus by suspending them (NtSuspendProcess). A tree past a
// memory or process limit is not halted before its kill: the job is
// terminated whole.
type jobLimits struct {
	*limit.Enforcer
	r       *winRunner
	wine    bool
	port    windows.Handle // the job's messages; 0: none read
	refused atomic.Int64   // process starts the job refused
	// refusedPID is the process the job refused an allocation (its
	// memory limit's message); 0: none.
	refusedPID atomic.Int64
	stopped    atomic.Bool // the throttle could not suspend a process
	// accounted: Wine's job accounting counts CPU time after all (a Wine
	// later than 8); it is then the figure.
	accounted bool

	// Under Wine: the CPU time of each process of the job as last seen,
	// that of those which ended, and the buffer of the system snapshot.
	seen  map[procKey]time.Duration
	ended time.Duration
	snap  []uint64
}

// procKey is a process: its PID and creation time.
type procKey struct {
	pid     int
	created int64
}

// Calls x/sys does not wrap.
var (
	kernel32                      = windows.NewLazySystemDLL("kernel32.dll")
	procGetQueuedCompletionStatus = kernel32.NewProc("GetQueuedCompletionStatus")
	procNtSuspendProcess          = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtSuspendProcess")
)

// wineWhy says why each limit is sampled under Wine (8.0, seen).
var wineWhy = map[limit.Kind]string{
	limit.Memory:  "Wine keeps a job object's memory limit but enforces none",
	limit.Pids:    "Wine keeps a job object's process limit but enforces none",
	limit.CPUTime: "Wine's job accounting counts no CPU time",
	limit.CPUs:    "Wine implements no CPU rate control",
}

// wineCPUBy names what holds --cpu-time under Wine, whose job accounting
// counts no CPU time (Wine 8): the sum over the job's processes.
func wineCPUBy(w *limit.Watch) string {
	return fmt.Sprintf("sampling every %v: the job's live processes, plus those that ended as last seen", w.Every)
}

// jobTreeLimits is the Windows runner's hold on the whole-tree limits:
// the job's (jobLimits) when one is asked, noJobLimits otherwise, so
// that a run without limits enters none of their code.
type jobTreeLimits interface {
	// enforce starts what the limits need while COMMAND runs and
	// returns the function that stops it.
	enforce() (stop func())
	hits() <-chan limit.Hit
	exceeded(h limit.Hit, timeOut func(string) string) (timedOut bool)
	// late acts on what was found exceeded once COMMAND ended; finish
	// completes the account.
	late()
	finish(res *Result)
}

// noJobLimits: no limit asked.
type noJobLimits struct{}

func (noJobLimits) enforce() func()                              { return func() {} }
func (noJobLimits) hits() <-chan limit.Hit                       { return nil }
func (noJobLimits) exceeded(limit.Hit, func(string) string) bool { return false }
func (noJobLimits) late()                                        {}
func (noJobLimits) finish(*Result)                               {}

// setLimits readies the limits after the job is made and before COMMAND
// starts: the job object's own, what contain samples instead, and, with
// --strict-limits, the refusal of anything the job object does not hold.
func (r *winRunner) setLimits() error {
	set := r.o.Limits
	if !set.Any() {
		return nil
	}
	l := &jobLimits{r: r, wine: underWine()}
	l.Enforcer = limit.NewEnforcer(set, l, r.log)
	// Under Wine each process sampled costs a few calls to wineserver:
	// the sampling stays under a tenth of the time.
	l.Next = func(_, _ limit.Sample, _, cost time.Duration) time.Duration {
		return max(l.Watch().Every, 10*cost)
	}
	r.lim = l
	w := l.Watch()
	why := map[limit.Kind]string{}
	if l.wine {
		for _, k := range set.Asked() {
			why[k] = wineWhy[k]
		}
		if set.Has(limit.CPUTime) {
			w.Enforce(limit.CPUTime, wineCPUBy(w), false)
		}
	} else {
		if set.Memory > 0 || set.Pids > 0 {
			if err := r.job.Limit(set.Memory, set.Pids); err != nil {
				why[limit.Memory] = fmt.Sprintf("the job object refused the limit: %v", err)
				why[limit.Pids] = why[limit.Memory]
			} else {
				if set.Memory > 0 {
					w.Enforce(limit.Memory, "job object (committed memory)", true)
				}
				if set.Pids > 0 {
					w.Enforce(limit.Pids, "job object (active processes)", true)
				}
			}
		}
		if set.CPUTime > 0 {
			w.Enforce(limit.CPUTime, fmt.Sprintf("job accounting, polled every %v", w.Every), true)
		}
		if set.CPUs > 0 {
			if err := r.job.CapCPU(set.CPUs); err != nil {
				why[limit.CPUs] = fmt.Sprintf("the job object refused a CPU rate cap: %v", err)
			} else {
				w.Enforce(limit.CPUs, "job object (CPU rate hard cap)", true)
			}
		}
	}
	if set.CPUs > 0 && !w.Kernel(limit.CPUs) {
		if err := procNtSuspendProcess.Find(); err != nil {
			return fmt.Errorf("--cpus %s cannot be held here: %s, and contain cannot suspend the tree's processes itself (%v)", set.Show(limit.CPUs), why[limit.CPUs], err)
		}
		w.Enforce(limit.CPUs, fmt.Sprintf("NtSuspendProcess/NtResumeProcess, sampled every %v", w.Every), false)
	}
	for _, k := range set.Asked() {
		if w.Kernel(k) {
			r.log("%s %s: enforced by %s", k.Option(), set.Show(k), w.By(k))
		} else {
			r.log("%s %s: enforced by %s (%s)", k.Option(), set.Show(k), w.By(k), why[k])
		}
	}
	if err := l.Refuse(func(k limit.Kind) string { return why[k] }); err != nil {
		return err
	}
	if set.Memory > 0 && w.Kernel(limit.Memory) || set.Pids > 0 && w.Kernel(limit.Pids) {
		port, err := r.job.Notifications()
		if err != nil {
			r.log("cannot read the job's messages (%v): a refused allocation is left to the command, and the run ends as it does", err)
		} else {
			l.port = port
		}
	}
	return nil
}

// enforce starts what the limits need while COMMAND runs: the reader of
// the job's messages, and the sampler (CPU time, what the job object does
// not hold, the --cpus throttle). It returns the function that stops
// them, which leaves the tree running.
func (l *jobLimits) enforce() (stop func()) {
	stopReader := func() {}
	if l.port != 0 {
		done := make(chan struct{})
		go l.readJobMessages(done)
		stopReader = func() {
			// Packets come out in order: every message the job posted
			// before this one is read first.
			windows.PostQueuedCompletionStatus(l.port, 0, stopKey, nil)
			<-done
			windows.CloseHandle(l.port)
		}
	}
	l.Start()
	return func() {
		stopReader()
		l.Stop()
	}
}

// stopKey is the completion key of the packet that stops the reader; the
// job's messages come with key 1.
const stopKey = 2

// readJobMessages reads the job's messages until the stop packet: a
// refused allocation is the memory limit exceeded; a refused process
// start is counted.
func (l *jobLimits) readJobMessages(done chan<- struct{}) {
	defer close(done)
	r := l.r
	for {
		var msg uint32
		var key, value uintptr
		ok, _, err := procGetQueuedCompletionStatus.Call(uintptr(l.port), uintptr(unsafe.Pointer(&msg)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), windows.INFINITE)
		switch {
		case ok == 0 && value == 0:
			r.log("cannot read the job's messages: %v", err)
			return
		case key == stopKey:
			return
		}
		switch msg {
		case job.MsgMemoryLimit:
			if l.First(limit.Memory) {
				// The process refused is named first, with what it
				// holds: the job's message says which one it was.
				l.refusedPID.Store(int64(value))
				l.Act(limit.Hit{Kind: limit.Memory, What: fmt.Sprintf("process %d of the tree was refused an allocation", value)})
			}
		case job.MsgProcessLimit:
			if l.refused.Add(1) == 1 {
				r.log("--pids %s: the job object refused a process start", r.o.Limits.Show(limit.Pids))
			}
		}
	}
}

// Sample measures the tree. Where the job object is the kernel: its
// accounting (CPU time, live processes) and its peak committed memory.
// Under Wine, which accounts neither: the job's processes, one by one,
// for their working sets, and a snapshot of the system's processes for
// their CPU time.
func (l *jobLimits) Sample() limit.Sample {
	r, w := l.r, l.Watch()
	s := limit.Sample{At: time.Now()}
	if acc, err := r.job.Accounting(); err == nil {
		s.CPU, s.Procs = acc.CPU(), int(acc.ActiveProcesses)
	}
	if !l.wine {
		if w.Set.Memory > 0 {
			if peak, _, err := r.job.PeakMemory(); err == nil {
				s.Memory = peak // the most so far: what the account keeps anyway
			}
		}
	} else {
		pids := r.job.PIDs()
		s.Procs = len(pids)
		for _, pid := range pids {
			h, err := r.openMember(pid, windows.PROCESS_QUERY_LIMITED_INFORMATION)
			if err != nil {
				continue // ended since the list was read
			}
			if u, err := proc.UsageOfHandle(h); err == nil {
				s.Memory += u.RSS
			}
			windows.CloseHandle(h)
		}
		if w.Set.CPUTime > 0 || w.Set.CPUs > 0 {
			if s.CPU > 0 && !l.accounted {
				l.accounted = true
				if w.Set.CPUTime > 0 {
					w.Enforce(limit.CPUTime, fmt.Sprintf("sampling every %v: the job's accounting", w.Every), false)
				}
			}
			if !l.accounted {
				s.CPU = l.wineCPU(pids)
			}
		}
	}
	return s
}

// openMember opens pid with access, if it is still a process of the job
// (a PID from the job's list may have ended and been given to another
// process since). IsProcessInJob needs PROCESS_QUERY_INFORMATION under
// Wine (the limited right is refused: access denied).
func (r *winRunner) openMember(pid int, access uint32) (windows.Handle, error) {
	h, err := windows.OpenProcess(access|windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, err
	}
	if in, err := r.job.Holds(h); !in {
		windows.CloseHandle(h)
		if err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("process %d is no longer in the job", pid)
	}
	return h, nil
}

// wineCPU is the CPU time of the job's processes under Wine: of those
// alive now, from one snapshot of the system's processes, and of those
// that ended, as last seen (what each used in its last interval is
// missed). Under Wine, GetProcessTimes of another process counts next to
// nothing (seen: 0.13 s for a process that had spun for 2 s), while the
// snapshot gives its Linux threads' own times.
func (l *jobLimits) wineCPU(pids []int) time.Duration {
	times, err := l.processTimes()
	if err != nil {
		return 0
	}
	if l.seen == nil {
		l.seen = map[procKey]time.Duration{}
	}
	now := map[procKey]bool{}
	var live time.Duration
	for _, pid := range pids {
		if t, ok := times[pid]; ok {
			k := procKey{pid, t.created}
			l.seen[k], now[k] = t.cpu, true
			live += t.cpu
		}
	}
	for k, cpu := range l.seen {
		if !now[k] {
			l.ended += cpu
			delete(l.seen, k)
		}
	}
	return l.ended + live
}

// processTime is one process of a snapshot.
type processTime struct {
	created int64
	cpu     time.Duration
}

// processTimes reads every process's creation time and CPU time, user and
// kernel, from one NtQuerySystemInformation(SystemProcessInformation).
func (l *jobLimits) processTimes() (map[int]processTime, error) {
	for try := 0; ; try++ {
		if len(l.snap) == 0 {
			l.snap = make([]uint64, 32<<10) // 256 KiB, 8-byte aligned
		}
		var n uint32
		err := windows.NtQuerySystemInformation(windows.SystemProcessInformation, unsafe.Pointer(&l.snap[0]), uint32(len(l.snap)*8), &n)
		if errors.Is(err, windows.STATUS_INFO_LENGTH_MISMATCH) && try < 4 {
			l.snap = make([]uint64, max(int(n)/8+8<<10, 2*len(l.snap)))
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	out := map[int]processTime{}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&l.snap[0])), len(l.snap)*8)
	for off := 0; off+int(unsafe.Sizeof(windows.SYSTEM_PROCESS_INFORMATION{})) <= len(buf); {
		p := (*windows.SYSTEM_PROCESS_INFORMATION)(unsafe.Pointer(&buf[off]))
		out[int(p.UniqueProcessID)] = processTime{created: p.CreateTime, cpu: time.Duration(p.UserTime+p.KernelTime) * 100}
		if p.NextEntryOffset == 0 {
			break
		}
		off += int(p.NextEntryOffset)
	}
	return out, nil
}

// Pause suspends the job's processes for d (or until done), then resumes
// them. It reports false when done came first.
func (l *jobLimits) Pause(d time.Duration, done <-chan struct{}) bool {
	r := l.r
	var held []*proc.Handle
	for _, pid := range r.job.PIDs() {
		h, err := r.openMember(pid, windows.PROCESS_SUSPEND_RESUME|windows.SYNCHRONIZE)
		if err != nil {
			continue
		}
		p := &proc.Handle{H: h}
		if err := p.Stop(); err != nil {
			if !errors.Is(err, proc.ErrGone) && !l.stopped.Swap(true) {
				r.log("--cpus: cannot suspend process %d: %v", pid, err)
			}
			p.Close()
			continue
		}
		held = append(held, p)
	}
	defer func() {
		for _, p := range held {
			p.Resume()
			p.Close()
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// Kill ends the tree for a memory or process limit exceeded, while
// COMMAND runs or after: the job is terminated, and COMMAND counts as
// killed (137). The message is said once, by the command (Result.Limit),
// -v or not.
func (l *jobLimits) Kill(h limit.Hit, _ bool) {
	emitLimit(l.r.o.Events, l.Watch(), h.Kind, h.What, "")
	l.r.terminate(syscall.SIGKILL)
}

// Outcome is what the job object did of the limits it held: the process
// starts it refused, its peak committed memory.
func (l *jobLimits) Outcome() limit.Outcome {
	var o limit.Outcome
	if n := l.refused.Load(); n > 0 {
		o.Refused, o.RefusedWhat = uint64(n), "process start(s)"
	}
	if l.Watch().Kernel(limit.Memory) {
		if peak, _, err := l.r.job.PeakMemory(); err == nil {
			o.MemoryPeak = peak
		}
	}
	return o
}

// hits is the main loop's channel of exceeded limits.
func (l *jobLimits) hits() <-chan limit.Hit { return l.Hits() }

// limitExceeded acts on an exceeded limit (limit.Enforcer's Exceeded): a
// CPU time limit times the run out through the loop's timeOut (the
// timeout signal, then --kill-after), and counts as timed out by what
// that did.
func (l *jobLimits) exceeded(h limit.Hit, timeOut func(string) string) (timedOut bool) {
	return l.Exceeded(h, func(why string) string {
		emitLimit(l.r.o.Events, l.Watch(), h.Kind, h.What, "timed out")
		return "timed out: " + timeOut(why)
	})
}

// lateLimits acts, once COMMAND has ended and the limits are no longer
// watched, on a memory or process limit found exceeded meanwhile: a
// refused allocation that COMMAND died of, or leftovers over the limit.
// The rest of the tree is ended and the run counts as killed by the
// limit, as on Linux. A CPU time limit no longer times anything out.
func (l *jobLimits) late() { l.CommandEnded() }

// finishLimits completes the account before the job is closed: what the
// job object did (Outcome).
func (l *jobLimits) finish(res *Result) {
	l.KernelOutcome()
	res.Limits = l.Watch()
	if e := l.End(); e != nil {
		res.Limit = &LimitEnd{Kind: e.Kind, Message: e.Message}
	}
}

// HeldBy reads what held limit k (limit.Attributor): each process of
// the job with its memory (the one the job refused an allocation first,
// whatever its share), or how many of the job's processes each one
// started (their parents, from a snapshot of the system's processes).
func (l *jobLimits) HeldBy(k limit.Kind, _ any) []report.Holder {
	r := l.r
	pids := r.job.PIDs()
	names := r.imageNames(pids)
	var out []report.Holder
	switch k {
	case limit.Memory:
		refused := int(l.refusedPID.Load())
		for i, pid := range pids {
			ph, err := r.openMember(pid, windows.PROCESS_QUERY_LIMITED_INFORMATION)
			if err != nil {
				continue
			}
			u, err := proc.UsageOfHandle(ph)
			windows.CloseHandle(ph)
			if err != nil {
				continue
			}
			rss := u.RSS
			h := report.Holder{PID: pid, Comm: names[i], RSSBytes: &rss}
			if pid == refused {
				h.How = "refused an allocation" // named first (limit.Top)
			}
			out = append(out, h)
		}
	case limit.Pids:
		parents, err := proc.ParentsOf()
		if err != nil {
			return nil
		}
		in := map[int]string{}
		for i, pid := range pids {
			in[pid] = names[i]
		}
		children := map[int]int{}
		for _, pid := range pids {
			if pp, ok := parents[pid]; ok {
				if _, member := in[pp]; member {
					children[pp]++
				}
			}
		}
		for pid, n := range children {
			out = append(out, report.Holder{PID: pid, Comm: in[pid], Children: n})
		}
	}
	return out
}
