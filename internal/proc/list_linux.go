package proc

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// ListTagged reads the environment of every visible process and returns
// those that carry RUNNING_PROCESS_ORIGINATOR.
func ListTagged() (Listing, error) {
	return listTagged(FS)
}

func listTagged(fs procfs.FS) (Listing, error) {
	sc, err := fs.ScanTagged(tag.Var, tag.DaemonVar)
	if err != nil {
		return Listing{}, err
	}
	boot, err := BootTime(fs)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Unreadable: sc.Unreadable, Procs: make([]session.Process, 0, len(sc.Procs))}
	for _, p := range sc.Procs {
		l.Procs = append(l.Procs, ProcessOf(p, boot))
	}
	withNamespaces(fs, sc.Procs, l.Procs)
	return l, nil
}

// ProcessOf is what ps shows of a process read from /proc: its usage too,
// from the stat line the scan read for its identity.
func ProcessOf(p procfs.Tagged, boot time.Time) session.Process {
	return session.Process{
		PID: p.PID, PPID: p.PPID, Start: p.Start, Started: procfs.StartTime(boot, p.Start),
		UID: p.UID, User: userName(p.UID), Argv: p.Argv, Comm: p.Comm, Value: p.Value, Daemon: p.Daemon,
		Usage: UsageFrom(p.Stat),
	}
}

var boot struct {
	once sync.Once
	t    time.Time
	err  error
}

func BootTime(fs procfs.FS) (time.Time, error) {
	if fs != FS {
		return fs.BootTime()
	}
	boot.once.Do(func() {
		if boot.t, boot.err = fs.BootTime(); boot.err != nil {
			if t, err := bootByClock(); err == nil {
				boot.t, boot.err = t, nil // no /proc/stat: mounted subset=pid
			}
		}
	})
	return boot.t, boot.err
}

// LookupOriginator tells what process PID of PID namespace ns (0: this
// /proc's own) names now: whether it exists, is a zombie, when it
// started, and its PID here.
func LookupOriginator(ns uint64, pid int) (session.Originator, error) {
	if ns != 0 {
		return lookupIn(FS, ns, pid)
	}
	st, err := ReadStat(pid, make([]byte, 0, 512))
	if h := hiddenErr(pid, err); h != nil {
		// /proc hides it, and it runs: alive, never gone (hidden_linux.go).
		return session.Originator{}, h
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return session.Originator{}, nil
	case err != nil:
		return session.Originator{}, err
	}
	o := session.Originator{Exists: true, Zombie: st.Zombie(), Start: st.Start, ViewPID: pid}
	if uid, err := FS.UID(pid, nil); err == nil {
		o.Owned, o.UID = true, uid
	}
	return o, nil
}

// Ancestors lists contain's parent, its parent, and so on up to PID 1.
func Ancestors() map[int]bool {
	out := map[int]bool{}
	buf := make([]byte, 0, 512)
	for pid := os.Getppid(); pid > 0 && !out[pid]; {
		out[pid] = true
		st, err := ReadStat(pid, buf)
		if err != nil {
			break
		}
		pid = st.PPID
	}
	return out
}
