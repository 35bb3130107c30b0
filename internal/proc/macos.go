package proc

// What `contain ps` and `contain reap` do on macOS, over plain values: the
// darwin files (list_darwin.go, reap_darwin.go) only fill macSys with the
// system calls, so that every decision here is tested on every OS
// (macos_test.go, with fakes).

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/proc/procargs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// The p_stat values of XNU's <sys/proc.h> that contain looks at (x/sys
// does not export them).
const (
	macSSTOP = 4 // stopped (SIGSTOP and the like)
	macSZOMB = 5 // exited, not yet waited for
)

// MacProc is what one kinfo_proc record says of a process.
type MacProc struct {
	PID, PPID, PGID int
	Start           uint64 // P_starttime, microseconds since the epoch: with PID, its identity
	Stat            int8   // P_stat
	RUID            int    // Eproc.Pcred.P_ruid: the user ps shows and reap compares
	EUID            int    // Eproc.Ucred.Uid: what kern.procargs2 compares with the reader's
	Comm            string // P_comm (at most 16 bytes)
}

func (p MacProc) Zombie() bool  { return p.Stat == macSZOMB }
func (p MacProc) Stopped() bool { return p.Stat == macSSTOP }

// macMicros turns a P_starttime Timeval into microseconds since the epoch.
func macMicros(sec int64, usec int32) uint64 {
	if sec < 0 || usec < 0 {
		return 0
	}
	return uint64(sec)*1e6 + uint64(usec)
}

// macComm is P_comm up to its first NUL.
func macComm(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// MacSys is what ps and reap ask of macOS. The darwin files fill it with
// system calls; tests fill it with fakes.
type MacSys struct {
	All    func() ([]MacProc, error)               // sysctl kern.proc.all (zombies included)
	one    func(pid int) (MacProc, error)          // sysctl kern.proc.pid.PID
	Args   func(pid int) ([]byte, error)           // sysctl kern.procargs2.PID
	exists func(pid int) error                     // kill(pid, 0)
	kill   func(pid int, sig syscall.Signal) error // kill(pid, sig)
	// uniqueIDs is proc_info's PROC_PIDUNIQIDENTIFIERINFO (UniqueIDs):
	// a process's unique ID, never handed out again (nil: not read).
	uniqueIDs func(pid int) (MacIDs, error)
	User      func(uid int) string // a user's name, or its number
	euid      int                  // contain's effective user
	root      bool                 // contain may read and signal every process
	sleep     func(time.Duration)  // time.Sleep; tests make it instant
	now       func() time.Time     // time.Now
}

// Lookup reads pid's record. found is false when there is no process with
// that PID. A missing PID gives no record (EIO from x/sys) and may give
// ESRCH; since both could also mean that the record could not be read,
// kill(pid, 0) decides: only ESRCH from it says the PID is free. Anything
// else is an error, and the caller assumes nothing.
func (m *MacSys) Lookup(pid int) (p MacProc, found bool, err error) {
	p, err = m.one(pid)
	switch {
	case err == nil && p.PID == pid:
		return p, true, nil
	case err == nil:
		err = fmt.Errorf("kern.proc.pid.%d returned PID %d", pid, p.PID)
	case !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ESRCH):
		return MacProc{}, false, err
	}
	if xerr := m.exists(pid); errors.Is(xerr, syscall.ESRCH) {
		return MacProc{}, false, nil
	}
	return MacProc{}, false, fmt.Errorf("PID %d exists but cannot be read: %w", pid, err)
}

// Reasons ps counts a process it could not read under.
const (
	reasonDenied   = "permission denied"
	reasonHidden   = "environment hidden by macOS"
	reasonRefused  = "refused by kern.procargs2"
	reasonGarbled  = "unexpected content"
	reasonTooLarge = "arguments larger than kern.procargs2 returns (ARG_MAX)"
)

// errArgsTooLarge: the process's strings area (arguments, environment,
// apple strings) is larger than kern.procargs2 can return, ARG_MAX
// (kern.argmax, 1 MiB). The kernel refuses a larger buffer (EINVAL) and
// fills a smaller one with the tail of the area only, in which the
// arguments cannot be told from the environment.
var errArgsTooLarge = errors.New("its arguments are larger than kern.procargs2 returns (ARG_MAX)")

// garbled: kern.procargs2 gave bytes that do not decode, however often
// they were read.
type garbled struct{ err error }

func (g *garbled) Error() string { return "unexpected content: " + g.err.Error() }
func (g *garbled) Unwrap() error { return g.err }

// readProcArgs2 reads kern.procargs2 into buf, which holds argc and as
// many bytes of strings as the kernel allows (ARG_MAX, kern.argmax): read
// fills buf and returns the length it wrote, size returns the length the
// whole would take. One read into the largest buffer takes the whole
// strings area of whatever program the process runs at that moment. (x/sys
// SysctlRaw asks the size, then reads into a buffer of that size: an area
// larger than ARG_MAX is then refused with EINVAL, every time, and an exec
// between the two calls leaves the tail of the new program's area.) A
// buffer filled to its end may hold only the tail of a larger area: size
// tells, and such an area cannot be read (errArgsTooLarge).
func readProcArgs2(buf []byte, read func([]byte) (int, error), size func() (int, error)) ([]byte, error) {
	n, err := read(buf)
	if err != nil {
		return nil, err
	}
	if n >= len(buf) {
		whole, err := size()
		if err != nil {
			return nil, err
		}
		if whole > len(buf) {
			return nil, errArgsTooLarge
		}
	}
	return bytes.Clone(buf[:n]), nil
}

// decodeArgs reads pid's kern.procargs2 and decodes it, checking the
// result as well as the decoding: a buffer read while the process
// executed another program can be part of the new program's strings, and
// decode all the same, hiding the tag or making one up from an argument.
// One that does not decode, or is not Plausible for comm, is read again;
// it is taken once it is plausible, or once two reads in a row give the
// same bytes (a process does not exec twice in a row unnoticed; and a
// right buffer can fail the name check, see Plausible). The error is
// kern.procargs2's, errArgsTooLarge, or *garbled.
func (m *MacSys) decodeArgs(pid int, comm string) (procargs.Args, error) {
	var last []byte
	for try := 0; ; try++ {
		raw, err := m.Args(pid)
		if err != nil {
			return procargs.Args{}, err
		}
		a, err := procargs.Parse(raw)
		again := last != nil && bytes.Equal(raw, last)
		switch {
		case err == nil && (again || a.Plausible(comm)):
			return a, nil
		case err != nil && again, try == 2:
			if err == nil {
				err = errors.New("the layout changes at every read")
			}
			return procargs.Args{}, &garbled{err}
		}
		last = raw
	}
}

// listTagged reads the environment of every process kern.proc.all lists
// and returns those that carry RUNNING_PROCESS_ORIGINATOR. A zombie (no
// environment left) and a process that ends while it is read are left
// out; one whose environment is hidden or refused is counted by reason.
func (m *MacSys) listTagged() (Listing, error) {
	procs, err := m.All()
	if err != nil {
		return Listing{}, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	l := Listing{Unreadable: map[string]int{}}
	for _, p := range procs {
		if p.PID <= 0 || p.Zombie() {
			continue // kernel_task has no environment; a zombie none left
		}
		a, reason := m.ReadArgs(p)
		if reason != "" {
			// launchd, never signalled, hides nothing that matters.
			if p.PID != 1 {
				l.Unreadable[reason]++
			}
			continue
		}
		if a == nil {
			continue // gone meanwhile
		}
		if q, ok := macProcess(p, *a, m.User); ok {
			l.Procs = append(l.Procs, q)
		}
	}
	return l, nil
}

// ReadArgs reads p's arguments and environment: nil and no reason when p
// is gone, or why they cannot be read (decodeArgs reads again what may
// have changed while it was read).
func (m *MacSys) ReadArgs(p MacProc) (*procargs.Args, string) {
	a, err := m.decodeArgs(p.PID, p.Comm)
	var g *garbled
	switch {
	case err == nil && a.EnvHidden:
		return nil, reasonHidden
	case err == nil:
		return &a, ""
	case errors.Is(err, errArgsTooLarge):
		// Known at once, without the wait for an exit below.
		return nil, reasonTooLarge
	case errors.As(err, &g):
		if m.Ended(p.PID, p.Start) {
			return nil, ""
		}
		return nil, reasonGarbled
	}
	reason := m.refusal(p, err)
	// A process contain may read is refused mostly while it exits: give
	// it a moment to end before counting it.
	if reason != reasonDenied && m.exits(p.PID, p.Start) || m.Ended(p.PID, p.Start) {
		return nil, ""
	}
	return nil, reason
}

// refusal names why kern.procargs2 refused p, which still runs. XNU says
// EINVAL for almost everything: another user's process (it compares the
// effective user IDs, root excepted), a process without arguments yet.
func (m *MacSys) refusal(p MacProc, err error) string {
	switch {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return reasonDenied
	case errors.Is(err, syscall.EINVAL) && !m.root && p.EUID != m.euid:
		return reasonDenied
	case errors.Is(err, syscall.EINVAL):
		return reasonRefused + " (EINVAL)"
	}
	return reasonRefused + " (" + err.Error() + ")"
}

// Ended reports whether the process seen as (pid, start) has exited: no
// process has that PID, it is a zombie, or another process has it now.
// When that cannot be told, it has not.
func (m *MacSys) Ended(pid int, start uint64) bool {
	now, found, err := m.Lookup(pid)
	return err == nil && (!found || now.Start != start || now.Zombie())
}

// exits reports whether the process seen as (pid, start), whose arguments
// could not be read, turns out to be exiting: ended within a few
// milliseconds. (kern.procargs2 refuses a process on its way out before
// it is a zombie; a live one that is refused only costs the wait.)
func (m *MacSys) exits(pid int, start uint64) bool {
	b := NewBackoff()
	for deadline := m.now().Add(20 * time.Millisecond); ; {
		if m.Ended(pid, start) {
			return true
		}
		if m.now().After(deadline) {
			return false
		}
		m.sleep(b.Next())
	}
}

// macProcess is what ps shows of p, given its decoded procargs2, and
// whether it carries the tag.
func macProcess(p MacProc, a procargs.Args, user func(int) string) (session.Process, bool) {
	value, ok := procargs.Getenv(a.Env, tag.Var)
	if !ok {
		return session.Process{}, false
	}
	daemon, _ := procargs.Getenv(a.Env, tag.DaemonVar)
	return session.Process{
		PID: p.PID, PPID: p.PPID, Start: p.Start, Started: time.UnixMicro(int64(p.Start)),
		UID: p.RUID, User: user(p.RUID), Argv: a.Argv, Comm: p.Comm, Value: value, Daemon: daemon == "1",
	}, true
}

// lookupOriginator tells what process pid names now.
func (m *MacSys) lookupOriginator(pid int) (session.Originator, error) {
	p, found, err := m.Lookup(pid)
	if err != nil || !found {
		return session.Originator{}, err
	}
	return session.Originator{Exists: true, Zombie: p.Zombie(), Start: p.Start, Owned: true, UID: p.RUID}, nil
}

// ancestors lists ppid, its parent, and so on up to launchd.
func (m *MacSys) ancestors(ppid int) map[int]bool {
	out := map[int]bool{}
	for pid := ppid; pid > 0 && !out[pid]; {
		out[pid] = true
		p, found, err := m.Lookup(pid)
		if err != nil || !found {
			break
		}
		pid = p.PPID
	}
	return out
}

// MacEntries turns kern.proc.all records into the tracker's scan. macOS
// gives no session with them: the tracker asks (getsid) when it matters.
func MacEntries(procs []MacProc) []Entry {
	out := make([]Entry, len(procs))
	for i, p := range procs {
		out[i] = Entry{PID: p.PID, PPID: p.PPID, Pgrp: p.PGID, Start: p.Start, Zombie: p.Zombie(), Comm: p.Comm}
	}
	return out
}

// errEnvHidden: macOS returned the process's arguments but not its
// environment.
var errEnvHidden = errors.New("environment hidden by macOS")

// readTag reads pid's tag from kern.procargs2: ok is false when it holds
// none; an error when the environment cannot be read, hidden included.
func (m *MacSys) readTag(pid int) (value string, ok bool, err error) {
	a, err := m.decodeArgs(pid, "")
	switch {
	case err != nil:
		return "", false, err
	case a.EnvHidden:
		return "", false, errEnvHidden
	}
	value, ok = procargs.Getenv(a.Env, tag.Var)
	return value, ok, nil
}

// signalSeen sends sig to pid if it is still the process seen (start
// time, and the unique ID read as it begins, read again right before the
// kill), not a zombie, and verify holds; a process that has ended gives
// ESRCH.
func (m *MacSys) signalSeen(pid int, start uint64, sig syscall.Signal, verify func() error) error {
	p := &MacPin{sys: m, pid: pid, start: start}
	if verify != nil {
		p.verify = func(MacProc) error { return verify() }
	}
	err := p.send(sig, true)
	if errors.Is(err, ErrGone) {
		return syscall.ESRCH
	}
	return err
}

// TagCheck is what reap checks of a tagged process besides its start
// time: that it still carries value. A hidden environment cannot be read
// and is not held against it: its PID and start time name the process
// that was seen with the tag.
func (m *MacSys) TagCheck(value string) func(MacProc) error {
	return func(now MacProc) error {
		a, err := m.decodeArgs(now.PID, now.Comm)
		if err == nil {
			if a.EnvHidden {
				return nil
			}
			got, ok := procargs.Getenv(a.Env, tag.Var)
			switch {
			case !ok:
				return fmt.Errorf("it no longer carries %s", tag.Var)
			case got != value:
				return fmt.Errorf("its tag changed to %q", got)
			}
			return nil
		}
		if errors.Is(err, errArgsTooLarge) {
			return fmt.Errorf("its environment cannot be read again: %v", err)
		}
		if m.exits(now.PID, now.Start) {
			return ErrGone
		}
		return fmt.Errorf("its environment cannot be read again: %v", err)
	}
}

// MacPin stands for a pin on macOS, which has no handle that holds a
// process: the process is read again (kern.proc.pid: same PID, same start
// time, not a zombie, and verify) immediately before every kill(2). A
// PID is handed out again only after every other PID up to 99998, so the
// few microseconds between the check and the kill leave no room for a
// new process to take it.
//
// The last read before the kill is the process's unique ID (proc_info),
// compared with the one read when the pin was made: unlike a start time
// in microseconds of a wall clock that can step back, a unique ID is
// never handed out again, and it is read after verify, which reads the
// process's environment and may take milliseconds.
type MacPin struct {
	sys    *MacSys
	pid    int
	start  uint64
	uid    uint64                  // its unique ID (0: not read yet)
	verify func(now MacProc) error // its tag, or its process group; nil: none
	// stoppedIt: a SIGSTOP of reap's reached it. One that fails a check
	// later is resumed before it is left alone.
	stoppedIt bool
}

// Check reads the process again: nil when it is the one seen and verify
// holds; errGone when it has ended (or is a zombie); errIdentity when its
// PID names a process started at another time, or of another unique ID
// than the pin's; a *pinFailure when it cannot be read; or why it is to be
// left alone. full false checks its identity only. The unique ID is read
// last, so that a kill right after Check follows it by microseconds.
func (p *MacPin) Check(full bool) error {
	if err := p.identify(); err != nil {
		return err
	}
	now, found, err := p.sys.Lookup(p.pid)
	switch {
	case err != nil:
		return &PinFailure{"cannot be checked", err}
	case !found:
		return ErrGone
	case now.Start != p.start:
		return ErrIdentity
	case now.Zombie():
		return ErrGone
	case full && p.verify != nil:
		if err := p.verify(now); err != nil {
			return err
		}
	}
	return p.sameProcess()
}

// identify reads the pin's unique ID, once: that of the process its PID
// names now, which the start time that Check compares next ties to the
// process seen (a PID taken meanwhile shows another start).
func (p *MacPin) identify() error {
	if p.uid != 0 || p.sys.uniqueIDs == nil {
		return nil
	}
	ids, err := p.sys.uniqueIDs(p.pid)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return ErrGone
	case err != nil:
		return &PinFailure{"cannot be checked", err}
	}
	p.uid = ids.UniqueID
	return nil
}

// sameProcess reads the unique ID again: errIdentity when the PID names
// another process than the one identified.
func (p *MacPin) sameProcess() error {
	if p.uid == 0 {
		return nil
	}
	ids, err := p.sys.uniqueIDs(p.pid)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return ErrGone
	case err != nil:
		return &PinFailure{"cannot be checked", err}
	case ids.UniqueID != p.uid:
		return ErrIdentity
	}
	return nil
}

// send checks the process and, when it is still the one reap acts on,
// signals it at once. A process checked before whose PID now names
// another has ended (errGone). One that fails verify is resumed if reap
// stopped it, and left alone (*leftAlone).
func (p *MacPin) send(sig syscall.Signal, full bool) error {
	err := p.Check(full)
	var f *PinFailure
	switch {
	case errors.Is(err, ErrIdentity):
		return ErrGone
	case err == nil:
		err = p.sys.kill(p.pid, sig)
		if errors.Is(err, syscall.ESRCH) {
			return ErrGone
		}
		return err
	case errors.Is(err, ErrGone), errors.As(err, &f):
		return err
	case !p.stoppedIt:
		return &LeftAlone{Err: err}
	}
	if rerr := p.send(macSIGCONT, false); rerr != nil && !errors.Is(rerr, ErrGone) {
		return &LeftAlone{Err: fmt.Errorf("%w once stopped; cannot resume it: %v", err, rerr)}
	}
	p.stoppedIt = false
	return &LeftAlone{Err: fmt.Errorf("%w once stopped; resumed it", err)}
}

// macOS's signal numbers for stop and continue (SIGSTOP, SIGCONT), which
// the syscall package of every OS does not have.
const (
	macSIGSTOP = syscall.Signal(17)
	macSIGCONT = syscall.Signal(19)
	macSIGKILL = syscall.Signal(9)
)

func (p *MacPin) Stop() error {
	err := p.send(macSIGSTOP, true)
	if err == nil {
		p.stoppedIt = true
	}
	return err
}

// Resume checks the identity only: a process whose tag changed after reap
// stopped it is resumed all the same.
func (p *MacPin) Resume() error {
	err := p.send(macSIGCONT, false)
	if err == nil {
		p.stoppedIt = false
	}
	return err
}

func (p *MacPin) Signal(sig syscall.Signal) error { return p.send(sig, true) }
func (p *MacPin) Kill() error                     { return p.send(macSIGKILL, true) }
func (p *MacPin) Close()                          {}

// exitedPins tells, for each pin, whether its process has ended.
func (m *MacSys) exitedPins(pins []Pin) []bool {
	out := make([]bool, len(pins))
	for i, p := range pins {
		mp := p.(*MacPin)
		out[i] = m.Ended(mp.pid, mp.start)
	}
	return out
}

// stopWaitMac is how long reap waits for processes sent SIGSTOP to show
// as stopped.
const stopWaitMac = 200 * time.Millisecond

// WaitStopped waits until each of pids (with their start times) is
// stopped, gone or a zombie, and returns those that are not by the
// deadline.
func (m *MacSys) WaitStopped(pids []int, starts []uint64) (running []int) {
	b := NewBackoff()
	deadline := m.now().Add(stopWaitMac)
	type seen struct {
		pid   int
		start uint64
	}
	todo := make([]seen, len(pids))
	for i := range pids {
		todo[i] = seen{pids[i], starts[i]}
	}
	for {
		var still []seen
		for _, s := range todo {
			now, found, err := m.Lookup(s.pid)
			if err != nil || found && now.Start == s.start && !now.Zombie() && !now.Stopped() {
				still = append(still, s)
			}
		}
		todo = still
		if len(todo) == 0 || m.now().After(deadline) {
			break
		}
		m.sleep(b.Next())
	}
	for _, s := range todo {
		running = append(running, s.pid)
	}
	return running
}

// Pin pins pid, started at start, for reap: verify (its tag, or its
// process group; nil: none) is checked again before every signal, and
// its unique ID, read now, right before each.
func (m *MacSys) Pin(pid int, start uint64, verify func(now MacProc) error) *MacPin {
	p := &MacPin{sys: m, pid: pid, start: start, verify: verify}
	p.identify() // or at the first check, which says why it cannot
	return p
}
