package shim

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/builtin"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/marker"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
)

// Client is contain's side of a shim: the process (contain __shim, or
// the built-in keeper), the pipe that orders it, whose EOF tells it that
// contain ended, and the pipe its records come on. Fork and StartKeeper
// start one; Start has one start COMMAND; Relay, Watch, Spare and
// CommandEnded serve it while COMMAND runs.
type Client struct {
	pid    int
	start  uint64
	orders *os.File // contain's end: its EOF tells the shim that contain ended
	status *os.File
	lines  *bufio.Reader
	done   chan struct{} // closed when every record of the shim was read
	exited bool          // it said that COMMAND ended
	// keeper: the built-in keeper (builtin.Keeper), not contain __shim:
	// orders takes one byte, the word to start COMMAND, and no lines.
	keeper bool
	// spawned is the keeper that builtin.Spawn started, until its first
	// record says that it ran (or its end that it could not).
	spawned *builtin.Child
	// marker is the identity of the session's marker the shim hands
	// COMMAND (package marker); 0: none.
	marker uint64
}

// Marker is the identity of the session's marker that COMMAND gets from
// the shim (0: none): read from the shim's own descriptor where contain
// did not make it (contain __shim places its own).
func (c *Client) Marker() uint64 {
	if c.marker == 0 {
		c.marker = marker.Of(c.pid)
	}
	return c.marker
}

// newClient is the client of shim pid, ordered through orders, its
// records read from status.
func newClient(pid int, orders, status *os.File) *Client {
	return &Client{pid: pid, start: proc.StartOf(pid), orders: orders, status: status,
		lines: bufio.NewReader(status), done: make(chan struct{})}
}

// PID is the shim's process ID.
func (c *Client) PID() int { return c.pid }

// ID is the shim's identity (its PID and start time), as the tracker and
// the crash guard know it.
func (c *Client) ID() proc.ID { return proc.ID{PID: c.pid, Start: c.start} }

// KeeperWord is what the built-in keeper is ordered (Brief): the word to
// start COMMAND; the brief it was started with (StartKeeper) has the rest.
var KeeperWord = []byte{1}

// ExecError is Brief's error when the shim could not start COMMAND: the
// errno of its exec (or fork).
type ExecError struct{ Errno syscall.Errno }

func (e *ExecError) Error() string { return e.Errno.Error() }
func (e *ExecError) Unwrap() error { return e.Errno }

// KeeperAvailable reports whether the shim can be the built-in keeper:
// there is code for this machine, and CONTAIN_DISABLE does not name
// "keeper".
func KeeperAvailable() bool { return builtin.Available() && !layers.Disabled("keeper") }

// Start has a shim start COMMAND as o says, and returns once COMMAND
// runs, with its PID, or with the start's error (an *ExecError where the
// shim could not execute it). The shim is the built-in keeper where
// there is one (KeeperAvailable) and o asks for no daemons; else, or
// should the keeper end before it starts COMMAND (said with log),
// contain __shim: the one early returns (started ahead by Fork; nil:
// none, or its error), or one forked now. tell is called with each shim
// before it is briefed: COMMAND must not run before the crash guard
// knows of the shim. The Client returned is the last one briefed, which
// contain holds even where the start failed; nil where none was.
func Start(o Orders, early func() (*Client, error), tell func(*Client), log func(format string, a ...any)) (*Client, int, error) {
	if KeeperAvailable() && !o.AllowDaemons {
		k, err := StartKeeper(o)
		if err == nil {
			tell(k)
			var pid int
			pid, err = k.Brief(KeeperWord)
			if err == nil || errors.As(err, new(*ExecError)) {
				return k, pid, err
			}
			// It ended before it started COMMAND (it could not map its
			// brief, say): the guard is told of the shim below instead.
			unix.Kill(k.pid, unix.SIGKILL)
			k.reaped()
		}
		log("cannot start the built-in keeper: %v (the shim runs as contain %s)", err, Arg)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, 0, err
	}
	c, err := early()
	if c == nil || err != nil {
		if c, err = Fork(); err != nil {
			return nil, 0, err
		}
	}
	tell(c)
	pid, err := c.Brief(append(b, '\n'))
	return c, pid, err
}

// Fork starts contain __shim, which waits for its orders (Brief). It runs
// on the main thread, whose children contain's reaper waits for: fork
// and exec are all it waits for, the shim's own start-up runs beside
// contain's.
func Fork() (*Client, error) {
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer or.Close()
	sr, sw, err := os.Pipe()
	if err != nil {
		ow.Close()
		return nil, err
	}
	defer sw.Close()
	nosigpipe.Quiet(ow)
	// The shim runs the binary that runs now (/proc/self/exe in the child
	// is contain's: an upgrade may have replaced the file since), with
	// contain's own environment, not COMMAND's: it is no member of the
	// session and carries no tag. Its own process group: a kill of
	// contain's group spares it, as it spares COMMAND.
	files, base := inherited()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"contain", Arg, strconv.Itoa(base)},
		&syscall.ProcAttr{Env: append(os.Environ(), "GOMAXPROCS=1"), Files: append(files, or.Fd(), sw.Fd()),
			Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		ow.Close()
		sr.Close()
		return nil, err
	}
	return newClient(pid, ow, sr), nil
}

// Drop ends a shim that Fork started and that was never briefed: EOF
// before any orders, and it exits; Drop reaps it.
func (c *Client) Drop() {
	c.orders.Close()
	c.status.Close()
	for {
		if _, err := unix.Wait4(c.pid, nil, 0, nil); err != unix.EINTR {
			return
		}
	}
}

// StartKeeper starts the built-in keeper, briefed to start COMMAND (o),
// which waits for the word to start it (Brief with KeeperWord). It runs
// on the main thread, as the shim does. The brief is written while the
// keeper executes: it reads it only once it has the word.
func StartKeeper(o Orders) (*Client, error) {
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	defer closeAll()
	files, base := inherited()
	var fdbase [4]byte
	binary.LittleEndian.PutUint32(fdbase[:], uint32(base))
	prog, err := builtin.Load("contain-shim", builtin.Keeper, fdbase[:])
	if err != nil {
		return nil, err
	}
	opened = append(opened, prog)
	brief, err := builtin.Memfd("contain-shim-brief")
	if err != nil {
		return nil, err
	}
	opened = append(opened, brief)
	journal, err := builtin.Memfd("contain-shim-journal")
	if err != nil {
		return nil, err
	}
	opened = append(opened, journal)
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	opened = append(opened, self)
	sr, sw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	opened = append(opened, sw)
	er, ew, err := os.Pipe()
	if err != nil {
		sr.Close()
		return nil, err
	}
	opened = append(opened, er)
	nosigpipe.Quiet(ew)
	moves := []builtin.Move{
		{Src: int(brief.Fd()), Dst: base + BriefFd}, {Src: int(sw.Fd()), Dst: base + StatusFd},
		{Src: int(er.Fd()), Dst: base + EndFd}, {Src: int(journal.Fd()), Dst: base + JournalFd},
		{Src: int(self.Fd()), Dst: base + ExeFd}, {Src: int(prog.Fd()), Dst: base + KeeperFd}}
	// The session's marker (package marker): the keeper holds it at
	// marker.FD, not close-on-exec, so COMMAND, which it forks, inherits
	// it there. None where the keeper's own descriptors would take FD.
	var mark uint64
	if marker.FD < base || marker.FD > base+KeeperFd {
		if w, ino, err := marker.New(); err == nil {
			defer unix.Close(w)
			moves, mark = append(moves, builtin.Move{Src: w, Dst: marker.FD}), ino
		}
	}
	argv := []string{"contain-shim", Arg, KeeperArg, strconv.Itoa(base)}
	env := append(os.Environ(), "GOMAXPROCS=1")
	// Spawned where it can be: contain goes on (briefs the guard, writes
	// the word) while the keeper executes. The descriptors contain
	// inherited open stay at their numbers, its own (close-on-exec) go.
	sp, err := builtin.Spawn(builtin.Spec{Argv: argv, Env: env, Prog: base + KeeperFd, Moves: moves})
	var pid int
	if err == nil {
		pid = sp.Pid
	} else {
		sp, mark = nil, 0 // the fork below places no marker
		pid, err = syscall.ForkExec("/proc/self/fd/"+strconv.Itoa(base+KeeperFd), argv,
			&syscall.ProcAttr{Env: env, Files: append(files, brief.Fd(), sw.Fd(), er.Fd(), journal.Fd(), self.Fd(), prog.Fd()),
				Sys: &syscall.SysProcAttr{Setpgid: true}})
	}
	if err != nil {
		sr.Close()
		ew.Close()
		return nil, err
	}
	c := newClient(pid, ew, sr)
	c.keeper, c.spawned, c.marker = true, sp, mark
	// The orders again as JSON, for contain __shim keeper should contain
	// die.
	b, err := json.Marshal(o)
	if err == nil {
		_, err = brief.Write(Brief(o, b, os.Getpid()))
	}
	if err != nil {
		ew.Close() // its end before the word: it exits
		c.reaped()
		sr.Close()
		return nil, err
	}
	return c, nil
}

// reaped waits for a keeper that ended (or was killed) before it started
// COMMAND, and then releases the memory a spawned one shared, no longer
// its.
func (c *Client) reaped() {
	for {
		_, err := unix.Wait4(c.pid, nil, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err == nil && c.spawned != nil {
			c.spawned.Ended()
			c.spawned = nil
		}
		return
	}
}

// Brief has the shim start COMMAND (orders: the orders' JSON line, or
// KeeperWord for the keeper) and returns COMMAND's PID once it runs, or
// the start's error: an *ExecError where the shim could not execute it.
func (c *Client) Brief(orders []byte) (int, error) {
	// Locked: contain briefs its shim on the main goroutine, which stays
	// on the main thread (run.PrepareRun).
	if _, err := nosigpipe.Locked(c.orders).Write(orders); err != nil {
		return 0, fmt.Errorf("cannot brief the shim: %w", err)
	}
	rec, err := ReadRecord(c.lines)
	var execErr error
	if c.spawned != nil {
		// It wrote a record, or ended: either way it is done with the
		// memory it shared.
		execErr = c.spawned.Executed()
		c.spawned = nil
	}
	switch {
	case execErr != nil:
		return 0, fmt.Errorf("cannot execute it: %v", execErr)
	case err != nil:
		return 0, fmt.Errorf("the shim ended before starting COMMAND: %v", err)
	case rec.Kind == Failed:
		return 0, &ExecError{Errno: syscall.Errno(rec.A)}
	case rec.Kind == Started:
		return int(rec.A), nil
	}
	return 0, fmt.Errorf("the shim said %+v", rec)
}

// Kill ends a shim whose start failed after it was briefed: its orders
// end and it is killed, not waited for (contain's reaper takes it).
func (c *Client) Kill() {
	c.orders.Close()
	unix.Kill(c.pid, unix.SIGKILL) // a child not yet waited for
}

// Receiver is what Relay tells of the shim's records, as contain's reaper
// would have seen it had COMMAND been its child: COMMAND's stops and end
// (more: other processes of the session lived on), and how each other
// process of the session that the shim reaped ended.
type Receiver struct {
	Stopped func(ws unix.WaitStatus)
	Exited  func(ws unix.WaitStatus, more bool)
	Reaped  func(pid int, ws unix.WaitStatus)
}

// Relay reads the shim's records after COMMAND's start, each to to, until
// the shim ends.
func (c *Client) Relay(to Receiver) {
	defer close(c.done)
	for {
		rec, err := ReadRecord(c.lines)
		if err != nil {
			return
		}
		switch rec.Kind {
		case Stopped:
			to.Stopped(unix.WaitStatus(rec.A))
		case Exited:
			c.exited = true
			to.Exited(unix.WaitStatus(rec.A), rec.B == 1)
		case Reaped:
			to.Reaped(int(rec.A), unix.WaitStatus(rec.B))
		}
	}
}

// CommandEnded waits until Relay has read every record of the shim, and
// reports whether it said that COMMAND ended: a shim that ended without
// saying so was killed.
func (c *Client) CommandEnded() bool {
	<-c.done
	return c.exited
}

// Spare tells the shim that process pid (started at start) left the
// session (--allow-daemons): it no longer waits for it, nor ends it
// should contain die. The keeper serves no --allow-daemons: nothing is
// said to it.
func (c *Client) Spare(pid int, start uint64) error {
	if c.keeper {
		return nil
	}
	_, err := fmt.Fprintf(nosigpipe.Writer(c.orders), "%s %d %d\n", Release, pid, start)
	return err
}

// ReapedCPU is the CPU time of the processes the shim reaped (its
// children's, in its own stat).
func (c *Client) ReapedCPU() time.Duration {
	_, child, _ := proc.UsageOf(c.pid, nil)
	return child
}

// WatchEvery is how often Watch reads the shim's children while COMMAND
// runs: every orphan of the session is re-parented to the shim, the
// nearest subreaper, the moment its parent ends, so that a daemon (which
// forks, lets its parent exit and calls setsid) is a child of the shim
// within microseconds of leaving every other link. Reading one small file
// per thread of the shim costs some microseconds, far less than a scan of
// every process (a tenth of the scans' CPU budget at this pace).
const WatchEvery = 5 * time.Millisecond

// Watch gives found each child of the shim but COMMAND (PID command) as
// soon as it is one, not at contain's next scan (5 to 200 ms later),
// once each: should contain, its guard and its shim all be killed at
// once, contain reap finds a daemon whose title hides its tag through
// the registry. It runs until the shim ends.
func (c *Client) Watch(command int, found func(proc.Entry)) {
	dir := fmt.Sprintf("/proc/%d/task", c.pid)
	t := time.NewTicker(WatchEvery)
	defer t.Stop()
	seen := map[proc.ID]bool{}
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if !proc.Lives(c.ID()) {
			return
		}
		for _, pid := range childrenOf(dir) {
			if pid == command {
				continue
			}
			e, ok := proc.EntryOf(pid)
			id := proc.ID{PID: e.PID, Start: e.Start}
			if !ok || e.PPID != c.pid || e.Zombie || seen[id] {
				continue // gone, no longer the shim's, or done
			}
			seen[id] = true
			found(e)
		}
	}
}

// childrenOf reads the children of every thread in dir (/proc/PID/task).
func childrenOf(dir string) []int {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// inherited are the descriptors a shim keeps at their numbers, for
// COMMAND: 0 to 2, and every one above that contain inherited (open, not
// close-on-exec: systemd's sockets, make's jobserver, a 5>log), the
// others closed (^uintptr(0)); base is the first number above them all,
// where the shim's own go.
func inherited() (files []uintptr, base int) {
	files, base = []uintptr{0, 1, 2}, 3
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return files, base
	}
	defer unix.Close(dir)
	var open []int
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(dir, buf)
		if err != nil || n <= 0 {
			break
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			fd, err := strconv.Atoi(name)
			if err != nil || fd < 3 || fd == dir {
				continue
			}
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
				open = append(open, fd)
				base = max(base, fd+1)
			}
		}
	}
	for fd := 3; fd < base; fd++ {
		files = append(files, ^uintptr(0))
	}
	for _, fd := range open {
		files[fd] = uintptr(fd)
	}
	return files, base
}
