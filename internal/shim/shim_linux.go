package shim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/marker"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
)

// Arg is argv[1] of the shim: contain itself, run again.
const Arg = "__shim"

// The shim closes the crash hole that scans leave where there is no
// cgroup (ordinary users, CONTAIN_DISABLE=cgroup). It is a small
// subreaper between contain and COMMAND, as tini -s and catatonit sit
// above their child: every process COMMAND starts stays in its subtree
// whatever it does (fork, setsid, lose its parent), because an orphan is
// re-parented to its nearest living subreaper ancestor, and the shim is
// one for as long as it lives. When contain is killed, the shim lives on
// (its own process group, every forwarded signal caught and dropped), and walking
// its subtree finds every process of the session with no window: nothing
// depends on a scan having seen a process before contain died.
//
// While contain lives the shim only relays: it starts COMMAND as contain
// asked, tells contain COMMAND's PID, its stops and its end, and how each
// other process it reaped ended, and exits once it has no child left, that
// is when nothing of the session is left. contain closes the group as
// without it; the shim's exit is what tells contain that the group is
// empty. When contain dies first (EOF on its pipe), the shim does what the
// crash guard does, from the top of the tree: COMMAND gets the timeout
// signal (-s), every other process SIGTERM, SIGKILL after the grace period
// (at most guard.Grace), and the shim writes the guard's report.
//
// Its descriptors: 0-2 contain's (COMMAND's), and from its argument BASE
// on: BASE the orders (JSON, then EOF when contain ends), BASE+1 the
// shim's records to contain. BASE is above every descriptor contain
// inherited: those are COMMAND's too, as they would be without a shim
// (systemd's sockets, make's jobserver, a 5>log). When COMMAND is to be
// the terminal's foreground job, the shim opens the terminal itself: it
// is in contain's session.
const (
	OrdersFd = 0
	StatusFd = 1
)

// ParseBase reads the shim's first descriptor from its argument.
func ParseBase(arg string) (int, bool) {
	n, err := strconv.Atoi(arg)
	return n, err == nil && n >= 3 && n < 1<<20
}

// Orders is what contain tells the shim, as one line of JSON.
type Orders struct {
	Path       string             `json:"path"`
	Argv       []string           `json:"argv"`
	Env        []string           `json:"env"`
	Foreground bool               `json:"foreground"`
	Pdeathsig  int                `json:"pdeathsig"` // COMMAND's, should the shim die
	Signal     int                `json:"signal"`    // COMMAND's when contain dies (-s)
	Tag        string             `json:"tag"`
	Grace      time.Duration      `json:"grace"`
	Verbose    bool               `json:"verbose"`
	Report     *guard.ReportOrder `json:"report,omitempty"`
	// AllowDaemons: contain may release daemons (lines "release PID
	// START" after this one); the shim then exits once only they are
	// left of its children, rather than wait for them.
	AllowDaemons bool `json:"allow_daemons,omitempty"`
}

// Release is contain's line that a daemon left the session.
const Release = "release"

// Main is the shim's main. It returns its exit status.
func Main(args []string) int {
	if len(args) == 2 && args[0] == KeeperArg {
		if base, ok := ParseBase(args[1]); ok {
			return keeperMain(base)
		}
	}
	base, ok := 0, len(args) == 1
	if ok {
		base, ok = ParseBase(args[0])
	}
	// Before anything else: contain started it (entry.Prove).
	err := errors.New("not contain's arguments")
	if ok {
		err = entry.First(entry.Prove(base+OrdersFd, entry.Pipe), entry.Prove(base+StatusFd, entry.Pipe))
	}
	if err != nil {
		return entry.Refuse("the shim", err)
	}
	// Nothing of this reaches COMMAND but what the orders say.
	for _, fd := range []int{base + OrdersFd, base + StatusFd} {
		unix.CloseOnExec(fd)
	}
	runtime.LockOSThread() // COMMAND's Pdeathsig follows the thread that forks it
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		text.Fprintf(os.Stderr, "contain: shim: cannot become a child subreaper: %v\n", err)
		return 125
	}
	in := bufio.NewReader(os.NewFile(uintptr(base+OrdersFd), "orders"))
	out := os.NewFile(uintptr(base+StatusFd), "status")
	line, err := in.ReadString('\n')
	var o Orders
	if err == nil {
		err = json.Unmarshal([]byte(line), &o)
	}
	if err != nil {
		return 0 // contain ended before it said what to run
	}
	s := newRun(o, out, os.Getppid())
	if err := s.start(); err != nil {
		errno := syscall.EINVAL
		errors.As(err, &errno)
		Record{Kind: Failed, A: int32(errno)}.Write(out)
		return 0
	}
	Record{Kind: Started, A: int32(s.cmd)}.Write(out)
	return s.serve(in)
}

// keeperMain takes over from the built-in keeper (builtin.Keeper), which
// executes contain __shim keeper BASE when contain has died (or when it
// cannot go on itself): it carries on from the keeper's journal, as the
// shim would have from the start of COMMAND. Its descriptors are the
// keeper's, from base.
func keeperMain(base int) int {
	// Before anything else: the keeper ignored every signal before it
	// executed this, but Go's runtime takes most of them back at its
	// start, and contain is gone: nothing but SIGKILL may end the session's
	// last holder halfway.
	signal.Ignore(append(signals.Fatal(), unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)...)
	// Then: contain started the keeper that executed this (entry.Prove).
	if err := entry.First(entry.Prove(base+EndFd, entry.Pipe), entry.Prove(base+BriefFd, entry.File),
		entry.Prove(base+JournalFd, entry.File), entry.Prove(base+StatusFd, entry.Pipe)); err != nil {
		return entry.Refuse("the shim", err)
	}
	unix.Close(base + ExeFd)
	for _, fd := range []int{base + BriefFd, base + StatusFd, base + EndFd, base + JournalFd} {
		unix.CloseOnExec(fd)
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) // kept across the exec; said again
	b, containPID, err := readBrief(os.NewFile(uintptr(base+BriefFd), "brief"))
	var o Orders
	if err == nil {
		err = json.Unmarshal(b, &o)
	}
	if err != nil {
		text.Fprintf(os.Stderr, "contain: shim: cannot read the keeper's brief: %v\n", err)
		return 125
	}
	s := newRun(o, os.NewFile(uintptr(base+StatusFd), "status"), containPID)
	journal := os.NewFile(uintptr(base+JournalFd), "journal")
	journal.Seek(0, io.SeekStart) // the keeper's writes left the offset at the end
	for {
		rec, err := ReadRecord(journal)
		if err != nil {
			break
		}
		switch rec.Kind {
		case Started:
			s.cmd = int(rec.A)
		case Exited: // the journal holds COMMAND's start and end only
			s.statuses[s.cmd] = unix.WaitStatus(rec.A)
			s.cmdDone = true
		}
	}
	if s.cmd == 0 {
		return 0 // COMMAND was never started
	}
	if !s.cmdDone {
		s.since = proc.StartOf(s.cmd)
		s.cmdPin, _ = proc.OpenPin(s.cmd)
	} else {
		// COMMAND is gone; its process group is no older than the shim.
		s.since = proc.StartOf(s.self)
	}
	s.log("took over from the keeper")
	return s.serve(bufio.NewReader(os.NewFile(uintptr(base+EndFd), "contain")))
}

// newRun is the shim's state for COMMAND, run for contain containPID.
func newRun(o Orders, out *os.File, containPID int) *run {
	s := &run{o: o, out: out, self: os.Getpid(), containPID: containPID, statuses: map[int]unix.WaitStatus{}}
	if o.Verbose {
		s.log = text.Logger(nosigpipe.Stderr(), fmt.Sprintf("contain[%d]: shim: ", containPID))
	} else {
		s.log = func(string, ...any) {}
	}
	return s
}

// serve relays, once COMMAND runs, until no child is left: in reads
// contain's lines until it ends, and an end before the session's is a
// crash, which the shim then closes.
func (s *run) serve(in *bufio.Reader) int {
	// From now on nothing but SIGKILL ends the shim: not the signals
	// contain forwards (an outer contain run's, whose session the shim is
	// in), not the terminal's job control. They are ignored only now that
	// COMMAND runs: an ignored signal would stay ignored in a process the
	// shim started after, which is to inherit only what contain inherited,
	// and the shim starts none. Ignoring costs a system call per signal,
	// where catching them cost the runtime a round trip between two
	// threads per signal, beside COMMAND's start (measured: 0.3-0.7 ms of
	// contain run -- true as an ordinary user). (Killed before, the shim
	// leaves COMMAND to its Pdeathsig and to contain, its subreaper, as if
	// it had never been.)
	go signal.Ignore(append(signals.Fatal(), unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)...)
	crashed := make(chan struct{})
	go func() {
		s.readReleases(in) // until contain ends
		s.mu.Lock()
		s.crashed = !s.finished
		s.mu.Unlock()
		if s.crashed {
			s.closeAfterCrash(s.containPID)
		}
		close(crashed)
	}()
	s.reap()
	s.mu.Lock()
	s.finished = true
	wasCrash := s.crashed
	s.mu.Unlock()
	if wasCrash {
		<-crashed // the report is being written
	}
	return 0
}

// run is the shim at work.
type run struct {
	o    Orders
	out  *os.File
	log  func(string, ...any)
	self int
	cmd  int // COMMAND
	// cmdDone: COMMAND has ended (the keeper reaped it before the
	// shim took over).
	cmdDone    bool
	containPID int
	since      uint64   // its start
	cmdPin     proc.Pin // COMMAND's: signalled after it is reaped, it hits nothing; nil: none

	mu       sync.Mutex
	finished bool // no child is left: the session is over
	crashed  bool // contain ended first
	statuses map[int]unix.WaitStatus
	spared   map[proc.ID]bool // daemons contain released (--allow-daemons)

	statusDeadline time.Time // the report waits for statuses until then
}

// start starts COMMAND as contain would have: its own process group, the
// terminal's foreground if asked, its environment, and a script without
// #! run by /bin/sh, as execvp does.
func (s *run) start() error {
	path, argv := s.o.Path, s.o.Argv
	const shell = "/bin/sh"
	tty := -1
	if s.o.Foreground {
		fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == nil {
			defer unix.Close(fd)
			tty = fd
		}
	}
	// The session's marker (package marker): COMMAND inherits it at
	// marker.FD; the shim keeps it, close-on-exec, so that contain reads
	// its identity here. Without it (the descriptor in use) the session
	// has none, as before.
	_, release, merr := marker.Place()
	if merr == nil {
		defer func() { release(s.cmd != 0) }()
	}
	for {
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.Signal(s.o.Pdeathsig)}
		if tty >= 0 {
			attr.Foreground, attr.Ctty = true, tty
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: s.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
		if errors.Is(err, unix.ENOEXEC) && argv[0] != shell && unix.Access(shell, unix.X_OK) == nil {
			path, argv = shell, append([]string{shell, path}, s.o.Argv[1:]...)
			continue
		}
		if err != nil {
			return err
		}
		s.cmd, s.since = pid, proc.StartOf(pid)
		s.cmdPin, _ = proc.OpenPin(pid)
		return nil
	}
}

// readReleases reads contain's lines after the orders, until contain
// ends: the daemons it released.
func (s *run) readReleases(in *bufio.Reader) {
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != Release {
			continue
		}
		if id, err := proc.ParseID(f[1], f[2]); err == nil {
			s.mu.Lock()
			if s.spared == nil {
				s.spared = map[proc.ID]bool{}
			}
			s.spared[id] = true
			s.mu.Unlock()
		}
	}
}

// sparedIDs lists the daemons contain released.
func (s *run) sparedIDs() []proc.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]proc.ID, 0, len(s.spared))
	for id := range s.spared {
		out = append(out, id)
	}
	return out
}

// reap waits for every child: COMMAND, whose stops and end go to contain,
// and every orphan of the session, re-parented to the shim. It returns
// when none is left, or, once COMMAND has ended, when only daemons that
// contain released are left: they are none of the session's, and go up
// to contain (a subreaper too), which leaves them the same way.
func (s *run) reap() {
	commandDone := s.cmdDone
	var poll *proc.Backoff
	for {
		var ws unix.WaitStatus
		flags := unix.WUNTRACED
		if commandDone && s.o.AllowDaemons {
			flags |= unix.WNOHANG
		}
		wpid, err := unix.Wait4(-1, &ws, flags, nil)
		switch {
		case err == unix.EINTR:
		case err != nil: // ECHILD: nothing of the session is left
			return
		case wpid == 0: // WNOHANG: none ended
			if proc.OnlySpared(s.self, s.sparedIDs()) {
				s.log("only daemons that contain spared are left: leaving them to contain")
				return
			}
			if poll == nil {
				poll = proc.NewBackoff()
			}
			time.Sleep(min(poll.Next(), 50*time.Millisecond))
		case proc.StoppedStatus(ws):
			if wpid == s.cmd && !commandDone {
				Record{Kind: Stopped, A: int32(ws)}.Write(s.out)
			}
		case wpid == s.cmd && !commandDone:
			s.keep(wpid, ws)
			more := proc.ReapEnded(func(ws *unix.WaitStatus, _ *unix.Rusage) (int, error) {
				return unix.Wait4(-1, ws, unix.WNOHANG, nil)
			}, func(pid int, ws unix.WaitStatus, _ *unix.Rusage) { s.reaped(pid, ws) })
			rec := Record{Kind: Exited, A: int32(ws)}
			if more {
				rec.B = 1
			}
			rec.Write(s.out)
			if !more {
				return
			}
			commandDone = true
		default:
			s.reaped(wpid, ws)
		}
	}
}

// reaped tells contain how a process other than COMMAND ended, and keeps
// it for the report the shim writes if contain has died.
func (s *run) reaped(pid int, ws unix.WaitStatus) {
	s.keep(pid, ws)
	Record{Kind: Reaped, A: int32(pid), B: int32(ws)}.Write(s.out)
}

// keep records how pid ended, for statusOf.
func (s *run) keep(pid int, ws unix.WaitStatus) {
	s.mu.Lock()
	s.statuses[pid] = ws
	s.mu.Unlock()
}

// statusOf is how pid ended, as the shim reaped it. A process seen gone
// through its pidfd may not have been waited for yet: a moment is given,
// once for all (a process outside the shim's tree never comes).
func (s *run) statusOf(pid int) (unix.WaitStatus, bool) {
	if s.statusDeadline.IsZero() {
		s.statusDeadline = time.Now().Add(200 * time.Millisecond)
	}
	deadline := s.statusDeadline
	for {
		s.mu.Lock()
		ws, ok := s.statuses[pid]
		s.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return ws, ok
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeAfterCrash ends the session after contain died: COMMAND gets the
// timeout signal and the grace period to act on it, every other process
// SIGTERM, then everything SIGKILL, found from the top of the tree.
func (s *run) closeAfterCrash(containPID int) {
	s.log("contain %d has ended without closing its group: closing it (session %s)", containPID, s.o.Tag)
	if s.cmdPin != nil && s.o.Signal != 0 {
		if err := s.cmdPin.Signal(syscall.Signal(s.o.Signal)); err == nil {
			s.log("sent %s to COMMAND %d", signals.Name(syscall.Signal(s.o.Signal)), s.cmd)
		}
	}
	o := guard.Orders{Value: s.o.Tag, Grace: s.o.Grace, Verbose: s.o.Verbose, Pgrp: s.cmd, Since: s.since,
		Report: s.o.Report, Signal: syscall.Signal(s.o.Signal), Writer: "shim", Spared: s.sparedIDs()}
	guard.Reap(o, containPID, min(o.Grace, guard.Grace), s.log, s.statusOf)
}
