package proc

import (
	"errors"
	"fmt"
	"os"

	"github.com/contain-cli/contain/session"
)

// PinOriginator pins pid, the originator of a session whose earliest
// process started at notAfter, for me to signal: a pidfd is opened first,
// then its stat and status are read. A signal sent through the pidfd
// afterwards proves that the PID named the pinned process when it was
// read (a process keeps its PID until it is reaped). ErrGone: it has
// ended; ErrIdentity: it started after the session; a PinFailure: it
// could not be pinned or read; otherwise why me may not signal it.
func PinOriginator(pid int, notAfter uint64, me session.Reaper) (*OriginatorPin, error) {
	pin, err := OpenPin(pid)
	if err != nil {
		return nil, err
	}
	st, err := ReadStat(pid, nil)
	uid := -1
	if err == nil {
		uid, err = FS.UID(pid, nil)
	}
	if err == nil {
		now := session.Originator{Exists: true, Zombie: st.Zombie(), Start: st.Start}
		err = originatorCheck(now, notAfter, uid, "", userName(uid), me)
	} else if h := hiddenErr(pid, err); h != nil {
		err = &PinFailure{What: "cannot be checked", Err: h}
	} else if Gone(err) {
		err = ErrGone
	} else {
		err = &PinFailure{What: "cannot be checked", Err: err}
	}
	if err != nil {
		pin.Close()
		return nil, err
	}
	o := &OriginatorPin{PID: pid, Start: st.Start, pin: pin, UID: uid, Owner: userName(uid)}
	o.Exe, o.SameExe = exeOf(pid)
	o.Argv = ArgvOf(pid) // read after the pin: of the pinned process
	return o, nil
}

// exeOf reads pid's executable: the path /proc/PID/exe links to ("" when
// it cannot be read: another user's, unless root), and whether it is the
// same file as this contain's (RunsThisExecutable).
func exeOf(pid int) (string, bool) {
	path, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", false
	}
	return path, RunsThisExecutable(pid)
}

// RunsThisExecutable reports whether pid runs the file this contain runs:
// /proc/PID/exe and /proc/self/exe name the same device and inode, which
// a path renamed or deleted since keeps.
func RunsThisExecutable(pid int) bool {
	a, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	b, err := os.Stat("/proc/self/exe")
	return err == nil && os.SameFile(a, b)
}

// Unseen says why this user cannot see the session whose originator is
// pid: pid is a live process whose environment cannot be read (another
// user's, unless root), nor then those of the processes it started. ""
// when pid names no live process, or its environment can be read.
func Unseen(pid int) string {
	o, err := LookupOriginator(0, pid)
	if err != nil || !o.Exists || o.Zombie {
		return hiddenUnseen(err)
	}
	_, _, err = ReadTag(pid, nil)
	if err == nil || Gone(err) || errors.Is(err, ErrNoEnviron) {
		return ""
	}
	owner := ""
	if o.Owned && o.UID != os.Getuid() {
		owner = session.UserWords(userName(o.UID), o.UID)
	}
	return unseenWhy(pid, owner, err)
}
