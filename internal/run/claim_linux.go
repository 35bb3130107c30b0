package run

import (
	"errors"
	"fmt"
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

// claimAddr is the socket of contain run pid, with --allow-daemons. Raw
// sockets, not package net: contain run starts before net (and what
// urfave/cli needs) is initialised, and importing it would change that
// (earlyrun's doc).
func claimAddr(pid int) *unix.SockaddrUnix {
	return &unix.SockaddrUnix{Name: "@contain-daemons-" + strconv.Itoa(pid)}
}

// claimTimeout bounds a claim's reads and writes.
var claimTimeout = unix.NsecToTimeval(int64(2 * time.Second))

// claimSocket makes a stream socket whose reads and writes time out.
func claimSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &claimTimeout)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &claimTimeout)
	return fd, nil
}

// readLine reads one short line from fd.
func readLine(fd int) (string, error) {
	var b []byte
	buf := make([]byte, 64)
	for len(b) < 256 {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			return string(b[:i]), nil
		}
	}
	return "", errors.New("no line")
}

// listenClaims starts taking claims; the returned function stops it.
func (r *runner) listenClaims() (stop func()) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.Bind(fd, claimAddr(r.self)); err == nil {
			err = unix.Listen(fd, 16)
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		r.log("cannot listen for contain run -d's daemons: %v (they are judged by their environment alone)", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err != nil {
				return // shut down
			}
			unix.SetsockoptTimeval(c, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &claimTimeout)
			unix.SetsockoptTimeval(c, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &claimTimeout)
			r.claim(c)
		}
	}()
	return func() {
		unix.Shutdown(fd, unix.SHUT_RDWR) // accept returns
		<-done
		unix.Close(fd)
	}
}

// claim answers one claim: "ok", or "no REASON".
func (r *runner) claim(c int) {
	defer unix.Close(c)
	answer := "ok"
	if err := r.checkClaim(c); err != nil {
		answer = "no " + err.Error()
		r.log("refused a daemon's claim: %v", err)
	}
	unix.Write(c, []byte(answer+"\n"))
}

func (r *runner) checkClaim(c int) error {
	cred, err := unix.GetsockoptUcred(c, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return fmt.Errorf("who connected is not known: %v", err)
	}
	line, err := readLine(c)
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
	c, err := claimSocket()
	if err != nil {
		return
	}
	defer unix.Close(c)
	if unix.Connect(c, claimAddr(opid)) != nil {
		return // no run that allows daemons
	}
	if _, err := unix.Write(c, []byte(fmt.Sprintf("%d %d\n", pid, proc.StartOf(pid)))); err != nil {
		return
	}
	answer, _ := readLine(c)
	switch answer = strings.TrimSpace(answer); {
	case answer == "ok":
		log("session %s lets %d outlive it (--allow-daemons)", outer, pid)
	case answer != "":
		log("session %s: %s", outer, strings.TrimPrefix(answer, "no "))
	}
}
