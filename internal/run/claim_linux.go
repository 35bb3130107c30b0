package run

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/tag"
)

// A daemon's claim. Reading a process's mark from its environment fails
// for the daemons that matter most: redis and nginx write their process
// title over their environment, ssh-agent and gpg-agent make themselves
// undumpable (nobody may read it), often before the first scan sees them.
// So contain run -d, inside a run of the same contain binary that allows
// daemons, tells that run itself, through an abstract Unix socket the run
// listens on: "PID START" of the daemon it just started, marked, as its
// child. The run believes it only from a member of its session that runs
// the same executable as itself (the kernel says who connected), and only
// for that member's own child: a process cannot claim another.

// claimAddr is the socket of contain run pid, with --allow-daemons.
func claimAddr(pid int) *net.UnixAddr {
	return &net.UnixAddr{Name: "@contain-daemons-" + strconv.Itoa(pid), Net: "unix"}
}

// listenClaims starts taking claims; the returned function stops it.
func (r *runner) listenClaims() (stop func()) {
	l, err := net.ListenUnix("unix", claimAddr(r.self))
	if err != nil {
		r.log("cannot listen for contain run -d's daemons: %v (they are judged by their environment alone)", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			r.claim(c)
		}
	}()
	return func() {
		l.Close()
		<-done
	}
}

// claim answers one claim: "ok", or "no REASON".
func (r *runner) claim(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	answer := "ok"
	if err := r.checkClaim(c); err != nil {
		answer = "no " + err.Error()
		r.log("refused a daemon's claim: %v", err)
	}
	fmt.Fprintf(c, "%s\n", answer)
}

func (r *runner) checkClaim(c *net.UnixConn) error {
	var cred *unix.Ucred
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil {
		return fmt.Errorf("who connected is not known: %v", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return errors.New("malformed claim")
	}
	id, err := proc.ParseID(f[0], f[1])
	if err != nil {
		return err
	}
	from := int(cred.Pid)
	if !sameExecutable(from) {
		return fmt.Errorf("%d does not run this contain", from)
	}
	st, err := proc.ReadStat(id.PID, nil)
	if err != nil || st.Start != id.Start {
		return fmt.Errorf("%d is gone", id.PID)
	}
	if st.PPID != from {
		return fmt.Errorf("%d is not the child of %d", id.PID, from)
	}
	r.scanAll() // both are seen, the claimed one judged if it can be
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	if !r.track.IsMember(proc.ID{PID: from, Start: proc.StartOf(from)}) {
		return fmt.Errorf("%d is no member of session %s", from, r.o.Tag)
	}
	if r.track.Released(id) {
		return nil // seen with the mark already
	}
	// A scan may have judged it already, by an environment it had written
	// its title over: the word of contain run -d, its parent, which
	// started it marked a moment ago, is better.
	e := proc.EntryFrom(id.PID, st)
	r.track.ReleaseNow(e)
	r.spared = append(r.spared, id)
	r.spare([]proc.Entry{e})
	return nil
}

// sameExecutable reports whether pid runs the file contain runs.
func sameExecutable(pid int) bool {
	var a, b unix.Stat_t
	return unix.Stat("/proc/self/exe", &a) == nil && unix.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &b) == nil &&
		a.Dev == b.Dev && a.Ino == b.Ino
}

// claimDaemon is contain run -d's side: when contain runs inside a
// session (the tag in its own environment), it tells that session's
// contain run of the daemon it started. Nothing listens unless that run
// allows daemons; what it answers is only said.
func claimDaemon(pid int, log Logger) {
	outer, ok := os.LookupEnv(tag.Var)
	if !ok {
		return
	}
	_, opid, err := tag.Parse(outer)
	if err != nil {
		return
	}
	c, err := net.DialUnix("unix", nil, claimAddr(opid))
	if err != nil {
		return // no run that allows daemons
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "%d %d\n", pid, proc.StartOf(pid))
	answer, _ := bufio.NewReader(c).ReadString('\n')
	switch answer = strings.TrimSpace(answer); {
	case answer == "ok":
		log("session %s lets %d outlive it (--allow-daemons)", outer, pid)
	case answer != "":
		log("session %s: %s", outer, strings.TrimPrefix(answer, "no "))
	}
}
