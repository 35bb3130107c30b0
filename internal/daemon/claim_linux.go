package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/tag"
)

// A daemon's claim. Reading a process's mark from its environment fails
// for the daemons that matter most: redis and nginx write their process
// title over their environment, ssh-agent and gpg-agent make themselves
// undumpable (nobody may read it), often before the first scan sees them.
// So contain run -d, inside a run of the same contain binary that allows
// daemons, tells that run itself, through an abstract Unix socket the run
// listens on: "PID START" of the daemon it just started, marked, as its
// child.
//
// Anyone may connect to an abstract socket; what the run checks before it
// spares the claimed process C for the peer P (the process that
// connected, as the kernel says, SO_PEERCRED):
//
//   - P runs the very executable contain runs, and its command line is
//     contain run with -d or --detach (/proc/P/cmdline, as runcmd reads it).
//   - P had sent nothing before the run asked (ClaimPrompt), after it had
//     seen the two facts above; the claim line is then read with the
//     sender of every byte of it (SCM_CREDENTIALS, which only root can
//     forge): P itself. So the line was written by P after P became
//     contain run -d: by contain's own code, which claims only the
//     process it started. A member that connects, forks a child holding
//     the socket and then execs contain (or writes the line first, and
//     then execs contain run -d) is refused, whatever its child says.
//   - P is a member of the session; C is P's child, alive, with the start
//     time claimed.
//   - C's environment, where it can be read and still shows a tag, carries
//     RUNNING_PROCESS_IS_DAEMON=1. One that shows no tag (a title written
//     over it, as redis and nginx do) or cannot be read (ssh-agent,
//     undumpable, and the run not root) rests on the checks above.
//
// A process that may ptrace contain run -d can make it say anything: that
// is no more than it can do to the run's members anyway.
//
// Against other users: every connection is served by a goroutine of its
// own, for at most deadline in all; at most atOnce at once, and
// perUser of one uid, so that another user cannot hold the socket
// against the run's own claims; the end of the run closes them all and
// waits for none. Every write is a send with MSG_NOSIGNAL: a peer that
// hung up gives EPIPE, never a SIGPIPE, which contain run would take for
// one from outside and forward to COMMAND's group.
//
// Against a name taken first (another user bound @contain-daemons-PID for
// PIDs to come): the run cannot listen and says so on stderr, with or
// without -v, and goes on judging daemons by their environment (refusing
// to run would let any user stop every contain run --allow-daemons);
// contain run -d sends its claim only to a listener whose PID is the one
// in its tag and whose uid is its own (or root's), and says when it is not.

// addr is the socket of contain run pid, with --allow-daemons. Raw
// sockets, not package net: contain run starts before net (and what
// urfave/cli needs) is initialised, and importing it would change that
// (earlyrun's doc). Deadlines come from package os's poller instead.
func addr(pid int) *unix.SockaddrUnix {
	return &unix.SockaddrUnix{Name: "@contain-daemons-" + strconv.Itoa(pid)}
}

const (
	// deadline bounds a whole claim, on either side.
	deadline = 2 * time.Second
	atOnce   = 32
	perUser  = 4
)

// conn is one connection, non-blocking, under package os's poller so
// that reads and writes honour a deadline and a Close wakes them.
type conn struct {
	f  *os.File
	rc syscall.RawConn
}

func newConn(fd int) (*conn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "claim")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &conn{f: f, rc: rc}, nil
}

// send writes b whole with MSG_NOSIGNAL: a peer gone is EPIPE, no signal.
func (c *conn) send(b []byte) error {
	for len(b) > 0 {
		var n int
		var err error
		if rerr := c.rc.Write(func(fd uintptr) bool {
			n, err = unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_NOSIGNAL)
			return err != unix.EAGAIN
		}); rerr != nil {
			return rerr
		}
		switch {
		case err == unix.EINTR:
		case err != nil:
			return err
		case n <= 0:
			return errors.New("short write")
		default:
			b = b[n:]
		}
	}
	return nil
}

// readLine reads one short line. With from > 0 every byte of it must come
// from process from (SCM_CREDENTIALS; the socket has SO_PASSCRED).
func (c *conn) readLine(from int) (string, error) {
	var b []byte
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for len(b) <= MaxClaimLine {
		var n, oobn int
		var err error
		if rerr := c.rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, err = unix.Recvmsg(int(fd), buf, oob, 0)
			return err != unix.EAGAIN
		}); rerr != nil {
			if errors.Is(rerr, os.ErrDeadlineExceeded) {
				return "", errors.New("no line in time")
			}
			return "", rerr
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n == 0 {
			break
		}
		if from > 0 {
			if pid, ok := sender(oob[:oobn]); !ok || pid != from {
				return "", fmt.Errorf("written by %d, not by %d", pid, from)
			}
		}
		b = append(b, buf[:n]...)
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			return string(b[:i]), nil
		}
	}
	return "", errors.New("no line")
}

// sender is the PID that SCM_CREDENTIALS names in oob.
func sender(oob []byte) (int, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			return int(cred.Pid), true
		}
	}
	return 0, false
}

// ClaimServer is a run's listener and the connections it serves.
type ClaimServer struct {
	l       *os.File
	log     func(string, ...any)
	grant   func(from int, e proc.Entry) error
	done    chan struct{}
	stopped atomic.Bool
	// granting is held while a claim that passed the checks is granted:
	// Stop waits for it, so that nothing is spared once Stop returns.
	granting sync.Mutex

	mu       sync.Mutex
	conns    map[*conn]bool
	byUser   map[uint32]int
	toldBusy bool
}

// BindClaims binds and listens on contain run pid's claim socket.
// contain run binds it before COMMAND starts: a contain run -d that
// COMMAND runs at once connects then, and its claim waits in the backlog
// until ServeClaims serves it. (Bound only once the run had started, the
// socket was not there yet for a contain run -d that came first on a
// loaded machine, about one run in a hundred of TestReapSpared: its
// daemon, unclaimed, was ended with the group.)
func BindClaims(pid int) (*os.File, error) {
	a := addr(pid)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	// SO_PASSCRED before any connection: the accepted sockets have it.
	if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err == nil {
		if err = unix.Bind(fd, a); err == nil {
			err = unix.Listen(fd, atOnce)
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), a.Name), nil
}

// SocketName is the socket's name, for messages.
func SocketName(pid int) string { return addr(pid).Name }

// ServeClaims takes claims on ln (BindClaims's) until Stop. A claim that
// passes the checks above is handed to grant, with the peer that made it:
// the session's own checks (the peer is a member) are grant's, and its
// error refuses the claim.
func ServeClaims(ln *os.File, log func(string, ...any), grant func(from int, e proc.Entry) error) (*ClaimServer, error) {
	s := &ClaimServer{l: ln, log: log, grant: grant, done: make(chan struct{}),
		conns: map[*conn]bool{}, byUser: map[uint32]int{}}
	rc, err := s.l.SyscallConn()
	if err != nil {
		s.l.Close()
		return nil, err
	}
	go s.accept(rc)
	return s, nil
}

// accept takes connections until the listener is closed.
func (s *ClaimServer) accept(rc syscall.RawConn) {
	defer close(s.done)
	for {
		var c int
		var err error
		if rerr := rc.Read(func(fd uintptr) bool {
			c, _, err = unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
			return err != unix.EAGAIN
		}); rerr != nil {
			return // closed
		}
		switch err {
		case nil:
			s.serve(c)
		case unix.EINTR, unix.ECONNABORTED:
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			time.Sleep(10 * time.Millisecond)
		default:
			return
		}
	}
}

// serve admits a connection and answers it in a goroutine of its own, or
// turns it away at once when too many are open (of its uid, or in all).
func (s *ClaimServer) serve(fd int) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		unix.Close(fd)
		return
	}
	s.mu.Lock()
	admitted := !s.stopped.Load() && len(s.conns) < atOnce && s.byUser[cred.Uid] < perUser
	told := s.toldBusy
	if !admitted {
		s.toldBusy = true
	}
	s.mu.Unlock()
	if !admitted {
		unix.SendmsgN(fd, []byte("no busy\n"), nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
		unix.Close(fd)
		if !told {
			s.log("turned away a claim from %d (%s) of uid %d: too many at once (said once)", cred.Pid, proc.CommOf(int(cred.Pid)), cred.Uid)
		}
		return
	}
	c, err := newConn(fd)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.stopped.Load() {
		s.mu.Unlock()
		c.f.Close()
		return
	}
	s.conns[c] = true
	s.byUser[cred.Uid]++
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			if s.conns[c] {
				delete(s.conns, c)
				if s.byUser[cred.Uid]--; s.byUser[cred.Uid] <= 0 {
					delete(s.byUser, cred.Uid)
				}
			}
			s.mu.Unlock()
			c.f.Close()
		}()
		c.f.SetDeadline(time.Now().Add(deadline))
		answer := "ok"
		if err := s.check(c, int(cred.Pid)); err != nil {
			answer = "no " + err.Error()
			s.log("refused a daemon's claim: %v", err)
		}
		c.send([]byte(answer + "\n"))
	}()
}

// Stop closes the listener and every connection; it waits for the accept
// loop (which returns at once), and for a claim being granted, not for
// any client.
func (s *ClaimServer) Stop() {
	s.stopped.Store(true)
	s.l.Close()
	<-s.done
	s.mu.Lock()
	for c := range s.conns {
		c.f.Close() // wakes its goroutine, which answers no one
	}
	s.mu.Unlock()
	s.granting.Lock()
	s.granting.Unlock()
}

// check runs the checks of the comment above for a claim from peer from.
func (s *ClaimServer) check(c *conn, from int) error {
	if from <= 0 {
		return errors.New("who connected is not known")
	}
	if !proc.RunsThisExecutable(from) {
		return fmt.Errorf("%d does not run this contain", from)
	}
	argv, err := proc.FS.Cmdline(from, nil)
	if err != nil || !DetachArgv(argv) {
		return fmt.Errorf("%d is not contain run -d", from)
	}
	// Nothing may have been sent before the question: a line written
	// before P ran contain would be waiting now.
	var peek [1]byte
	switch n, _, err := unix.Recvfrom(c.fd(), peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); {
	case n > 0:
		return fmt.Errorf("%d spoke before it was asked", from)
	case err == nil:
		return fmt.Errorf("%d hung up", from)
	}
	if err := c.send([]byte(ClaimPrompt + "\n")); err != nil {
		return fmt.Errorf("%d: %v", from, err)
	}
	line, err := c.readLine(from)
	if err != nil {
		return err
	}
	id, err := ParseClaim(line)
	if err != nil {
		return err
	}
	st, err := proc.ReadStat(id.PID, nil)
	if err != nil || st.Start != id.Start {
		return fmt.Errorf("%d is gone", id.PID)
	}
	if st.PPID != from {
		return fmt.Errorf("%d is not the child of %d", id.PID, from)
	}
	if env, err := proc.FS.Environ(id.PID, nil); err == nil {
		if tagged, marked := ClaimedEnv(env); tagged && !marked {
			return fmt.Errorf("%d is not marked %s=1", id.PID, tag.DaemonVar)
		}
	}
	s.granting.Lock()
	defer s.granting.Unlock()
	if s.stopped.Load() {
		return errors.New("the run has ended")
	}
	return s.grant(from, proc.EntryFrom(id.PID, st))
}

// fd is the connection's descriptor, for calls that need no waiting.
func (c *conn) fd() int {
	fd := -1
	c.rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// Claim is contain run -d's side: when contain runs inside a
// session (the tag in its own environment), it tells that session's
// contain run of the daemon it started. Nothing listens unless that run
// allows daemons; what it answers is only said (-v), but a listener that
// is not that run's contain is said on stderr, and told nothing.
func Claim(pid int, log func(string, ...any)) {
	outer, ok := os.LookupEnv(tag.Var)
	if !ok {
		return
	}
	_, opid, err := tag.Parse(outer)
	if err != nil {
		return
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	// connect(2) waits while the backlog is full: at most deadline.
	tv := unix.NsecToTimeval(int64(deadline))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	began := time.Now()
	addr := addr(opid)
	if unix.Connect(fd, addr) != nil {
		unix.Close(fd)
		return // no run that allows daemons
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(cred.Pid) != opid || cred.Uid != uint32(os.Geteuid()) && cred.Uid != 0 {
		unix.Close(fd)
		who := "someone unknown"
		if err == nil {
			who = fmt.Sprintf("PID %d (uid %d)", cred.Pid, cred.Uid)
		}
		text.Fprintf(nosigpipe.Stderr(), "contain: %s is held by %s, not session %s's contain: no claim sent for %d\n", addr.Name, who, outer, pid)
		return
	}
	c, err := newConn(fd)
	if err != nil {
		return
	}
	defer c.f.Close()
	c.f.SetDeadline(began.Add(deadline))
	answer, err := c.readLine(0)
	if err == nil && answer == ClaimPrompt {
		if err = c.send([]byte(FormatClaim(proc.ID{PID: pid, Start: proc.StartOf(pid)}))); err == nil {
			answer, err = c.readLine(0)
		}
	}
	switch answer = strings.TrimSpace(answer); {
	case err != nil:
		log("session %s: no answer to the claim for %d (%s): %v", outer, pid, proc.CommOf(pid), err)
	case answer == "ok":
		log("session %s lets %d (%s) outlive it (--allow-daemons)", outer, pid, proc.CommOf(pid))
	case answer != "":
		log("session %s: %s", outer, strings.TrimPrefix(answer, "no "))
	}
}
