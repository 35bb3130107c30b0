package proc

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/session"
)

// Darwin is macOS itself, for the logic of macos.go.
var Darwin = &MacSys{
	All:    allProcs,
	one:    oneProc,
	Args:   procArgs2,
	exists: func(pid int) error { return unix.Kill(pid, 0) },
	kill:   unix.Kill,
	// A unique ID is read before every kill: UniqueIDs.
	uniqueIDs: UniqueIDs,
	User:      userName,
	euid:      os.Geteuid(),
	root:      os.Geteuid() == 0,
	sleep:     time.Sleep,
	now:       time.Now,
}

// kinfoOf is what contain reads of one kinfo_proc record.
func kinfoOf(k *unix.KinfoProc) MacProc {
	return MacProc{
		PID:   int(k.Proc.P_pid),
		PPID:  int(k.Eproc.Ppid),
		PGID:  int(k.Eproc.Pgid),
		Start: macMicros(k.Proc.P_starttime.Sec, k.Proc.P_starttime.Usec),
		Stat:  k.Proc.P_stat,
		RUID:  int(k.Eproc.Pcred.P_ruid),
		EUID:  int(k.Eproc.Ucred.Uid),
		Comm:  macComm(k.Proc.P_comm[:]),
	}
}

// allProcs lists every process, zombies included.
func allProcs() ([]MacProc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]MacProc, len(ks))
	for i := range ks {
		out[i] = kinfoOf(&ks[i])
	}
	return out, nil
}

// oneProc reads one process's record. With no such PID the kernel returns
// no record, which x/sys reports as EIO (macSys.lookup makes sure).
func oneProc(pid int) (MacProc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return MacProc{}, err
	}
	return kinfoOf(k), nil
}

// ListTagged reads the environment of every process (kern.procargs2) and
// returns those that carry RUNNING_PROCESS_ORIGINATOR, with their usage
// (UsageOf, one proc_info call each, the tagged ones only). Those whose
// environment the kernel refuses or hides are counted by reason.
func ListTagged() (Listing, error) {
	l, err := Darwin.listTagged()
	if err != nil {
		return l, err
	}
	buf := make([]byte, macTaskInfoSize)
	for i := range l.Procs {
		u, _, err := UsageOf(l.Procs[i].PID, buf)
		if err != nil {
			u = session.Usage{Why: err.Error()}
		}
		l.Procs[i].Usage = u
	}
	return l, nil
}

// LookupOriginator tells what process PID names now: whether it exists, is
// a zombie, and when it started (microseconds). macOS has no PID
// namespaces: ns is always 0, and another is an error.
func LookupOriginator(ns uint64, pid int) (session.Originator, error) {
	if ns != 0 {
		return session.Originator{}, ErrNoNamespaces
	}
	o, err := Darwin.lookupOriginator(pid)
	if o.Exists {
		o.ViewPID = pid
	}
	return o, err
}

// Ancestors lists contain's parent, its parent, and so on up to launchd.
func Ancestors() map[int]bool { return Darwin.ancestors(os.Getppid()) }
