package proc

import (
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
	} else if Gone(err) {
		err = ErrGone
	} else {
		err = &PinFailure{What: "cannot be checked", Err: err}
	}
	if err != nil {
		pin.Close()
		return nil, err
	}
	return &OriginatorPin{PID: pid, Start: st.Start, pin: pin}, nil
}
