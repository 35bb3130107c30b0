//go:build linux || darwin

package guard

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/session"
)

// Arg is argv[1] of the guard: contain itself, run again.
const Arg = "__guard"

// Grace caps the guard's grace period: nothing of the group may
// outlive contain by more than a second.
const Grace = 500 * time.Millisecond

// Guard is the process that kills the group if contain dies without closing
// it (SIGKILL, OOM). It runs in its own session, so that a kill of contain's
// process group spares it, and it carries contain's own environment, not
// the session's tag, so that it is no member of the session. It waits for
// the end of a pipe that only contain holds open: EOF means contain died.
// A normal run ends it with SIGKILL once the group is empty.
//
// The guard is started before COMMAND (see PrepareRun), so that there is no
// moment in which COMMAND could fork and contain die unguarded. What it
// guards is told through the pipe: the session (before COMMAND starts, and
// before the cgroup is made), then COMMAND's process group (once started).
// An EOF before the session line means no COMMAND was ever started.
type Guard struct {
	pid int
	w   *os.File // the orders: the pipe, or a memfd (the built-in waiter)
	// hold is the pipe's write end where w is a memfd: its end (EOF)
	// is contain's.
	hold *os.File
	// ready is the waiter shell's word that it runs its script (see
	// confirm); nil once heard, or where contain __guard waits itself.
	ready *os.File
	// starting is the built-in waiter while it may still be executing
	// (startSpawned); nil once Ready knows it waits.
	starting interface {
		Executed() error
		Ended()
	}
	// waiter is what the guard waits in, for -v: the built-in waiter,
	// /bin/sh, or contain __guard.
	waiter string
}

// Waiter says what the guard waits in, for -v.
func (g *Guard) Waiter() string { return g.waiter }

// Start starts the guard. It is called off the main thread: the
// reaper (main thread, __WNOTHREAD) must not see it among its children.
// The guard's stderr is contain's; it writes there only when told to be
// verbose. On linux/amd64 it waits in a program of contain's own, where
// the kernel lets it run one (startSpawned, or startCoded on a kernel
// without clone3); else in the shell where there is one that can be
// executed, else as contain __guard itself. A guard that startSpawned
// started may still be executing when Start returns: Ready waits for it.
func Start() (*Guard, error) {
	if !layers.Disabled("waiter") {
		if g, err := startSpawned(); err == nil {
			return g, nil
		}
	}
	return startOther()
}

// Prepare readies the guard's start on the calling thread, as far as it
// can go without starting it, and returns what starts it: a function to
// call on another thread (Start's rule). It readies the built-in waiter
// (startSpawned) where there is one; the function falls back as Start
// does, and is Start itself where nothing could be readied.
func Prepare() func() (*Guard, error) {
	if layers.Disabled("waiter") {
		return Start
	}
	p, err := prepareSpawned()
	if err != nil {
		return Start
	}
	return func() (*Guard, error) {
		if g, err := p.start(); err == nil {
			return g, nil
		}
		return startOther()
	}
}

// startOther starts the guard by the other ways Start tries.
func startOther() (*Guard, error) {
	if !layers.Disabled("waiter") {
		if g, err := startCoded(); err == nil {
			return g, nil
		}
	}
	if unix.Access(waiterShell, unix.X_OK) == nil {
		if g, err := startWaiter(true); err == nil {
			return g, nil
		}
		// A /bin/sh that cannot be executed (its loader or interpreter
		// missing): the guard waits itself.
	}
	return startWaiter(false)
}

// Ready returns once the guard waits, before COMMAND starts: a waiter
// that Start left executing has done so. If it could not (a kernel or a
// security module that refuses to execute a memfd), the guard is started
// again by the other ways Start has, and told the orders given so far;
// Ready then says why in failed. An error: there is no guard (and Stop
// signals nothing).
func (g *Guard) Ready() (failed, err error) {
	c := g.starting
	if c == nil {
		return nil, nil
	}
	g.starting = nil
	failed = c.Executed()
	if failed == nil {
		return nil, nil
	}
	// It exited 127 (or, should the wait itself have failed, it is ended
	// now: a child not yet reaped, the PID is still its): reaped here, so
	// that Stop signals no PID of another's.
	unix.Kill(g.pid, unix.SIGKILL)
	for {
		if _, err := unix.Wait4(g.pid, nil, 0, nil); err != unix.EINTR {
			break
		}
	}
	g.pid = 0
	// From another thread: this is the reaper's, which must not see the
	// guard among its children.
	var ng *Guard
	started := make(chan struct{})
	go func() {
		ng, err = startOther()
		close(started)
	}()
	<-started
	if err == nil {
		// The shell's word that it runs its script, before it is told
		// anything (else contain __guard waits itself).
		err = ng.confirm()
	}
	if err != nil {
		return failed, err
	}
	orders, err := io.ReadAll(io.NewSectionReader(g.w, 0, 1<<62))
	if err == nil {
		_, err = nosigpipe.Writer(ng.w).Write(orders)
	}
	g.w.Close()
	if g.hold != nil {
		g.hold.Close()
	}
	*g = *ng
	if err != nil {
		g.Stop()
		g.pid = 0
		return failed, fmt.Errorf("cannot hand the orders to the guard: %w", err)
	}
	return failed, nil
}

// startWaiter starts the guard waiting in the shell, or as contain
// __guard itself.
func startWaiter(inShell bool) (*Guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	nosigpipe.Quiet(w)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return nil, err
	}
	defer null.Close()
	files := []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), r.Fd()}
	path, argv := exe, []string{"contain", Arg, strconv.Itoa(os.Getpid())}
	var ready *os.File
	if inShell {
		// The shell says on its fd 4 that it runs the script, so that one
		// that cannot is replaced before anything needs guarding.
		var readyW *os.File
		ready, readyW, err = os.Pipe()
		if err != nil {
			w.Close()
			return nil, err
		}
		defer readyW.Close()
		files = append(files, readyW.Fd())
		// The shell executes contain long after it started, maybe after
		// an upgrade removed or replaced the file at exe: it is handed
		// the binary that runs now, open as its fd 5, and falls back to
		// the path only if that cannot be opened.
		if self, err := os.Open("/proc/self/exe"); err == nil {
			defer self.Close()
			files = append(files, self.Fd())
		}
		// argv[0] is "sh": a multi-call binary (busybox, toybox) picks
		// the program it runs by that name. $0 names the guard in ps.
		path, argv = waiterShell, []string{"sh", "-c", waiterScript, "contain-guard", exe, strconv.Itoa(os.Getpid())}
	}
	if kept := markerPipe(); kept >= 0 {
		// macOS: the guard holds the marker's kept end from its start,
		// through the shell's exec (markerPipe).
		for len(files) < keptFD {
			files = append(files, ^uintptr(0)) // closed
		}
		files = append(files, uintptr(kept))
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   append(os.Environ(), "GOMAXPROCS=1"),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		w.Close()
		if ready != nil {
			ready.Close()
		}
		return nil, err
	}
	waiter := "contain " + Arg
	if inShell {
		waiter = waiterShell
	}
	return &Guard{pid: pid, w: w, ready: ready, waiter: waiter}, nil
}

// confirm makes sure that the guard waits, before the first order: the
// waiter shell has said so, or it has ended (a /bin/sh that runs no such
// script: a multi-call binary without a shell in it, a program that is
// no shell) or kept silent for readyWait, and contain __guard, started
// in its place, waits itself. Called by the reaper's thread, it starts
// that guard from another one.
func (g *Guard) confirm() error {
	ready := g.ready
	if ready == nil {
		return nil
	}
	g.ready = nil
	defer ready.Close()
	ready.SetReadDeadline(time.Now().Add(readyWait))
	var b [1]byte
	if n, _ := ready.Read(b[:]); n == 1 {
		return nil
	}
	g.Stop()
	started := make(chan error)
	go func() {
		ng, err := startWaiter(false)
		if err == nil {
			g.pid, g.w, g.waiter = ng.pid, ng.w, ng.waiter
		}
		started <- err
	}()
	return <-started
}

// ordersArg is the guard's last argument when its orders are in fd 4,
// a memfd contain wrote them to, and fd 3 the pipe whose EOF is
// contain's end (the built-in waiter).
const ordersArg = "fd:4"

// keptFD is where the guard holds the marker's kept end (macOS:
// markerPipe).
const keptFD = 6

// readyWait bounds how long contain waits for the waiter shell's word: a
// shell starts in a millisecond, and has had contain's start to do so.
const readyWait = 2 * time.Second

// The guard waits in the shell, not in a second Go program: a Go runtime
// starting beside contain and COMMAND on every run was a third of contain
// run -- true. The shell reads the orders until the pipe's EOF, ignoring
// signals as the guard does, and only then executes contain __guard with
// them. Where there is no /bin/sh, or one that cannot run the script,
// contain __guard waits itself.
const waiterShell = "/bin/sh"

// waiterScript ignores every signal the guard ignores (by number: contain
// may be nested in another contain run, which forwards them all to its
// members), says on fd 4 that it runs, reads the orders until EOF, then
// executes the contain binary it was handed as fd 5 (or, without one,
// the path in $1).
//
// The orders go to contain __guard on its standard input (a here-document),
// not as an argument: with a line per tracked process they can outgrow
// what one argument may hold.
var waiterScript = `trap '' ` + signalNumbers(signals.Fatal()) + `
echo >&4
exec 4>&-
o=
while IFS= read -r l; do o="$o$l
"; done <&3
g="$1"
if [ -e /proc/self/fd/5 ]; then g=/proc/self/fd/5; fi
exec "$g" ` + Arg + ` "$2" - <<EOF
$o
EOF`

// signalNumbers lists sigs as numbers, for the shell's trap.
func signalNumbers(sigs []os.Signal) string {
	nums := make([]string, len(sigs))
	for i, s := range sigs {
		nums[i] = strconv.Itoa(int(s.(syscall.Signal)))
	}
	return strings.Join(nums, " ")
}

// guardSession, guardCommand and guardMember are the lines of the guard's
// pipe.
const (
	guardSession = "session"
	guardCommand = "command"
	guardMember  = "member"
	guardRelease = "release"
	guardReport  = "report"
	guardShim    = "shim"
	guardHook    = "hook"     // the --on-timeout command runs: PID START
	guardHookEnd = "hook-end" // it and what it started have been ended
	guardCgroup  = "cgroup"   // the run's cgroup and what enabling its limits changed: a CgroupOrder
	guardMarker  = "marker"   // the session's marker (package marker): its pipe's inode (Linux), or HELD KEPT (macOS)
	guardLineage = "lineage"  // a member's lineage (macOS): UNIQUEID IDVERSION
)

// CgroupOrder is the run's cgroup and what contain changed to enable its
// limits' controllers (cgroup.Enable): the guard removes the one and
// undoes the other when contain has died. contain and the guard may be in
// contain's leaf then, from where the run's group is not found beside
// them.
type CgroupOrder struct {
	Dir     string   `json:"dir"`
	Parent  string   `json:"parent,omitempty"`  // where controllers were enabled
	Leaf    string   `json:"leaf,omitempty"`    // where contain and the guard went
	Enabled []string `json:"enabled,omitempty"` // the controllers contain enabled
}

// Cgroup tells the guard the run's cgroup and what was changed for it.
func (g *Guard) Cgroup(o CgroupOrder) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.orders(), "%s %s\n", guardCgroup, b)
	return err
}

// ReportOrder is what the guard needs to write the report after a
// crash, sent as one line of JSON.
type ReportOrder struct {
	Path    string    `json:"path"`
	Command []string  `json:"command"`
	Started time.Time `json:"started"`
}

// ReportTo tells the guard where to write the report if contain dies.
func (g *Guard) ReportTo(o ReportOrder) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.orders(), "%s %s\n", guardReport, b)
	return err
}

// Watch tells the guard the session it guards: its tag value, the grace
// period and whether to be verbose. A line this short is written at once
// (PIPE_BUF), and a pipe nobody reads yet holds it. The pipe-safe writer:
// if the guard is gone, the write fails (EPIPE) without a SIGPIPE that
// contain would forward to the group as if it came from outside.
//
// signalCommand: COMMAND has no Pdeathsig (macOS; Linux with
// CONTAIN_DISABLE=pdeathsig or macos), so the guard sends it sig when
// contain dies, unless the shim does.
func (g *Guard) Watch(value string, grace time.Duration, verbose bool, sig syscall.Signal, signalCommand bool) error {
	if err := g.confirm(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(g.orders(), "%s %s %s %t %d %t\n", guardSession, value, grace, verbose, int(sig), signalCommand)
	return err
}

// Command tells the guard COMMAND's process group and its start time.
func (g *Guard) Command(pgrp int, since uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardCommand, pgrp, since)
	return err
}

// Shim tells the guard of the shim: it closes the session itself if
// contain dies, and the guard waits for it to end before it looks for
// what is left. PID 0: there is none after all (the last line counts).
func (g *Guard) Shim(pid int, start uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardShim, pid, start)
	return err
}

// Marker tells the guard the identity of the session's marker (package
// marker): should contain die, a process that holds it is the session's,
// whatever else it dropped.
func (g *Guard) Marker(ino uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d\n", guardMarker, ino)
	return err
}

// MarkerPair tells the guard the session's marker as macOS names it
// (track.Marker): the pair of handles of the pipe whose kept end the
// guard holds (MarkerEnd).
func (g *Guard) MarkerPair(m track.Marker) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardMarker, m.Held, m.Kept)
	return err
}

// Lineage tells the guard a member's lineage as the kernel keeps it
// (macOS: its unique ID and pidversion), so that, should contain die,
// the guard's scans find what it forked after it ended, re-parented to
// launchd (track.Lineage).
func (g *Guard) Lineage(ids proc.MacIDs) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardLineage, ids.UniqueID, ids.IDVersion)
	return err
}

// Member tells the guard of a process the tracker found, so that it is
// found after a crash even where no link to the session is left.
func (g *Guard) Member(pid int, start uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardMember, pid, start)
	return err
}

// Release tells the guard of a daemon that left the session
// (--allow-daemons): the guard spares it, and what it starts.
func (g *Guard) Release(pid int, start uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardRelease, pid, start)
	return err
}

// Hook tells the guard that the --on-timeout command runs, leading a
// process group of its own (PID and start time): should contain die
// while it runs, the guard ends it and what it started, as contain would
// have; HookEnded, that contain has ended them itself.
func (g *Guard) Hook(pid int, start uint64) error {
	_, err := fmt.Fprintf(g.orders(), "%s %d %d\n", guardHook, pid, start)
	return err
}

func (g *Guard) HookEnded() error {
	_, err := fmt.Fprintf(g.orders(), "%s\n", guardHookEnd)
	return err
}

// orders writes the guard's orders: to the built-in waiter's memfd
// directly (a file raises no SIGPIPE), else through the pipe-safe writer:
// if the guard is gone, the write fails (EPIPE) without a SIGPIPE that
// contain would forward to the group as if it came from outside.
func (g *Guard) orders() io.Writer {
	if g.hold != nil {
		return g.w
	}
	return nosigpipe.Writer(g.w)
}

// Kill sends the guard SIGKILL, once the session it guards is over,
// without waiting for its end: Stop, which must still be called, reaps
// it.
func (g *Guard) Kill() {
	if g.pid != 0 {
		unix.Kill(g.pid, unix.SIGKILL) // not yet reaped: the PID is still its
	}
}

// Stop ends the guard of a run that closed its group itself.
func (g *Guard) Stop() {
	if g.pid != 0 {
		g.Kill()
		for {
			if _, err := unix.Wait4(g.pid, nil, 0, nil); err != unix.EINTR {
				break
			}
		}
	}
	if g.starting != nil {
		g.starting.Ended()
		g.starting = nil
	}
	g.w.Close()
	if g.hold != nil {
		g.hold.Close()
	}
	if g.ready != nil {
		g.ready.Close()
		g.ready = nil
	}
}

// Orders is what contain told its guard.
type Orders struct {
	Value   string         // "": no session was started
	Signal  syscall.Signal // the timeout signal (-s), COMMAND's when contain dies
	Grace   time.Duration
	Verbose bool
	Pgrp    int // 0: unknown
	Since   uint64
	Members []proc.ID
	Spared  []proc.ID // daemons that left the session (--allow-daemons)
	Report  *ReportOrder
	Shim    proc.ID // pid 0: none
	Hook    proc.ID // the --on-timeout command, while it runs; pid 0: none
	Writer  string  // who writes the report: "guard" (""), or "shim"
	Cgroup  *CgroupOrder
	Marker  uint64       // the session's marker's inode (Linux; 0: none)
	Pair    track.Marker // the session's marker's pair of handles (macOS; zero: none)
	// Lineage are the members' lineages contain learned (macOS).
	Lineage []proc.MacIDs
	// SignalCommand: COMMAND has no Pdeathsig; the guard sends it Signal
	// when contain dies, unless the shim does (see Watch).
	SignalCommand bool
}

// ParseOrders reads the lines contain wrote to its guard. A line cut
// short by contain's death is ignored.
func ParseOrders(b []byte) (Orders, error) {
	var o Orders
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] { // the last is "" or cut short
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == guardSession && len(f) >= 4 && len(f) <= 6:
			grace, err1 := time.ParseDuration(f[2])
			verbose, err2 := strconv.ParseBool(f[3])
			var sig int
			var err3, err4 error
			if len(f) >= 5 {
				sig, err3 = strconv.Atoi(f[4])
			}
			if len(f) == 6 {
				o.SignalCommand, err4 = strconv.ParseBool(f[5])
			}
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return o, err
			}
			o.Value, o.Grace, o.Verbose, o.Signal = f[1], grace, verbose, syscall.Signal(sig)
		case f[0] == guardCommand && len(f) == 3:
			id, err := proc.ParseID(f[1], f[2])
			if err != nil {
				return o, err
			}
			o.Pgrp, o.Since = id.PID, id.Start
		case f[0] == guardReport && len(f) >= 2:
			var ro ReportOrder
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, guardReport+" ")), &ro); err != nil {
				return o, err
			}
			o.Report = &ro
		case f[0] == guardCgroup && len(f) >= 2:
			var co CgroupOrder
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, guardCgroup+" ")), &co); err != nil {
				return o, err
			}
			o.Cgroup = &co
		case f[0] == guardShim && len(f) == 3:
			id, err := proc.ParseID(f[1], f[2])
			if err != nil {
				return o, err
			}
			o.Shim = id
		case f[0] == guardHook && len(f) == 3:
			id, err := proc.ParseID(f[1], f[2])
			if err != nil {
				return o, err
			}
			o.Hook = id
		case f[0] == guardHookEnd && len(f) == 1:
			o.Hook = proc.ID{}
		case f[0] == guardMember && len(f) == 3:
			id, err := proc.ParseID(f[1], f[2])
			if err != nil {
				return o, err
			}
			o.Members = append(o.Members, id)
		case f[0] == guardLineage && len(f) == 3:
			uid, err1 := strconv.ParseUint(f[1], 10, 64)
			version, err2 := strconv.ParseInt(f[2], 10, 32)
			if err1 != nil || err2 != nil || uid == 0 {
				return o, fmt.Errorf("bad lineage line %q", line)
			}
			o.Lineage = append(o.Lineage, proc.MacIDs{UniqueID: uid, IDVersion: int32(version)})
		case f[0] == guardMarker && len(f) == 2:
			ino, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return o, err
			}
			o.Marker = ino
		case f[0] == guardMarker && len(f) == 3:
			held, err1 := strconv.ParseUint(f[1], 10, 64)
			kept, err2 := strconv.ParseUint(f[2], 10, 64)
			if err1 != nil || err2 != nil || held == 0 || kept == 0 {
				return o, fmt.Errorf("bad marker line %q", line)
			}
			o.Pair = track.Marker{Held: held, Kept: kept}
		case f[0] == guardRelease && len(f) == 3:
			id, err := proc.ParseID(f[1], f[2])
			if err != nil {
				return o, err
			}
			o.Spared = append(o.Spared, id)
		default:
			return o, fmt.Errorf("unexpected line %q", line)
		}
	}
	return o, nil
}

// Main is the guard's main: args are contain's PID and, when the
// shell waited and read them, "-" for the orders on standard input, or
// "fd:4" for orders in fd 4 once fd 3's pipe has ended (the built-in
// waiter); otherwise fd 3 is the pipe, read here. It returns the exit
// status. Before anything else it proves that contain started it
// (prove): else it says so in one line and returns entry.Refused.
func Main(args []string) int {
	if err := prove(args); err != nil {
		return entry.Refuse("the crash guard", err)
	}
	pid, err := strconv.Atoi(args[0])
	// Nothing but contain's SIGKILL ends the guard halfway: not a verbose
	// line to a closed pipe, nor a signal forwarded to the group of an
	// outer contain run that the guard's contain is part of.
	signal.Ignore(signals.Fatal()...)
	// Nothing is read until contain's end closes, that is when contain
	// has exited, however it exited.
	var b []byte
	switch {
	case len(args) == 2 && args[1] == "-":
		b, err = io.ReadAll(os.Stdin) // read by the shell that waited
	case len(args) == 2 && args[1] == ordersArg:
		unix.Close(5) // contain's binary, which the waiter executed
		// The waiter saw the pipe end; reading it to its EOF makes sure
		// of it (nothing is written there) before the orders are read.
		if _, err = io.Copy(io.Discard, os.NewFile(3, "contain")); err == nil {
			b, err = readFrom(os.NewFile(4, "orders"))
		}
	default:
		b, err = io.ReadAll(os.NewFile(3, "contain"))
	}
	o, perr := ParseOrders(b)
	log := func(string, ...any) {}
	if o.Verbose {
		log = text.Logger(os.Stderr, "contain: guard: ")
	}
	if err := errors.Join(err, perr); err != nil {
		log("reading contain's orders: %v", err)
	}
	if o.Value == "" {
		return 0 // contain ended before it started anything
	}
	if o.Hook.PID != 0 {
		endHook(o.Hook, log)
	}
	if o.Shim.PID != 0 {
		// The shim, above every process of the session, closes it; what
		// the guard finds afterwards is what the shim could not end.
		log("contain %d has ended without closing its group: the shim %d closes it", pid, o.Shim.PID)
		waitGone(o.Shim, shimWait)
	} else {
		log("contain %d has ended without closing its group: reaping session %s", pid, o.Value)
	}
	Reap(o, pid, min(o.Grace, Grace), log, nil)
	return 0
}

// prove checks that the guard was started as contain starts it: with
// contain's PID, and orders only on descriptors that this user or root
// made (entry.Prove): fd 3, the pipe whose end is contain's, and the
// orders' own descriptor (standard input, or fd 4). Nothing is taken
// from the command line or the environment but where to read.
func prove(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("not contain's arguments")
	}
	if pid, err := strconv.Atoi(args[0]); err != nil || pid <= 0 {
		return fmt.Errorf("not contain's PID: %q", args[0])
	}
	if err := entry.Prove(3, entry.Pipe); err != nil {
		return err
	}
	if len(args) == 1 {
		return nil
	}
	switch args[1] {
	case "-":
		// The waiter shell's here-document: a pipe, or a file it made.
		return entry.Prove(0, entry.Anyhow)
	case ordersArg:
		return entry.Prove(4, entry.File)
	}
	return fmt.Errorf("not contain's arguments: %q", args[1])
}

// readFrom reads f from its start.
func readFrom(f *os.File) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// endHook ends the --on-timeout command that was running as contain
// died, with what it started: the hook, its descendants and its process
// group (the tracker's rules, from the hook's start: nothing older, and
// no group whose ID was handed out again), with SIGKILL, as contain ends
// it after the grace period; again until a scan finds nothing, at most
// hookEndWait. The hook is no member of the session: the reap after it
// does not look for it.
func endHook(hook proc.ID, log func(string, ...any)) {
	tr := track.New(os.Getpid(), hook.PID, hook.Start, "")
	deadline := time.Now().Add(hookEndWait)
	b := proc.NewBackoff()
	for {
		procs, err := proc.Scan()
		if err != nil {
			log("on-timeout: cannot list processes: %v", err)
		}
		live, _ := tr.Update(procs)
		if len(live) == 0 {
			return
		}
		for _, p := range live {
			if err := proc.SignalMember(p.PID, p.Start, unix.SIGKILL, nil); err == nil {
				log("on-timeout: killed %d (%s) of the --on-timeout command, as contain died while it ran", p.PID, p.Comm)
			}
		}
		if time.Now().After(deadline) {
			log("on-timeout: still running %v after contain died", hookEndWait)
			return
		}
		time.Sleep(b.Next())
	}
}

// hookEndWait bounds how long the guard keeps ending the hook.
const hookEndWait = 2 * time.Second

// shimWait bounds how long the guard leaves the session to the shim: its
// grace period, at most Grace, and the kills after it.
const shimWait = 5 * time.Second

// waitGone waits until process id has ended, at most limit.
func waitGone(id proc.ID, limit time.Duration) {
	deadline := time.Now().Add(limit)
	b := proc.NewBackoff()
	for proc.Lives(id) && time.Now().Before(deadline) {
		time.Sleep(min(b.Next(), time.Until(deadline)))
	}
}

// Reap does what reap does, for one session: its tagged processes,
// daemons included (kill-on-close spares none), its cgroup, and what the
// tracker finds from what contain saw: COMMAND's process group, the
// members contain told of, and what they started since.
//
// statusOf, if not nil, gives the wait status of a process of the session
// that ended (the shim reaps them); the guard has none.
func Reap(o Orders, pid int, grace time.Duration, log func(string, ...any), statusOf func(int) (unix.WaitStatus, bool)) {
	if statusOf == nil {
		statusOf = func(int) (unix.WaitStatus, bool) { return 0, false }
	}
	me := reap.Me()
	tr := track.New(os.Getpid(), o.Pgrp, o.Since, o.Value)
	tr.TagOf, tr.SidOf = track.TagReader(o.Value), proc.SessionOf
	// What holds the marker is the session's, found by the guard's scans
	// too (Linux: its descriptor at marker.FD; macOS: the pair of handles,
	// while the guard holds the kept end).
	tr.Marker = markerHolds(o)
	// macOS: what descends from a member contain knew, the ones that
	// ended included, is the session's (nothing on Linux).
	tr.UniqueIDs = track.LineageReader()
	tr.Seed(o.Lineage)
	for _, m := range o.Members {
		tr.Remember(m.PID, m.Start)
	}
	// The daemons contain spared (--allow-daemons) are spared still,
	// tagged or not.
	for _, id := range o.Spared {
		tr.Release(id.PID, id.Start)
	}
	opts := session.Options{Filter: session.Filter{Values: []string{o.Value}}, IncludeDaemons: true}
	// A process that carries the tag is the session's only when it is
	// also contain's user's, or one contain told of: a tag is a claim any
	// process can make, and root's guard must not end another user's
	// process for it.
	uid := os.Getuid()
	scan := func() ([]session.Choice, error) {
		cs, err := reap.Choose(opts, me)
		return slices.DeleteFunc(cs, func(c session.Choice) bool {
			id := proc.ID{PID: c.PID, Start: c.Start}
			return tr.Released(id) || c.UID != uid && !c.Registered && !tr.IsMember(id)
		}), err
	}
	targets, err := scan() // Reap leaves the ones to skip alone
	if err != nil {
		log("%v", err)
	}
	if o.Shim.PID != 0 {
		tr.Adopt(o.Shim.PID, o.Shim.Start)
	}
	// COMMAND has been sent its timeout signal (-s) as contain died: by
	// the kernel (Pdeathsig), or by the shim, or, on macOS, by the guard
	// now. It is left the grace period to act on that signal alone; the
	// others get SIGTERM; SIGKILL ends what is left of all.
	cgs := cgroup.OfRun(pid)
	if c := o.Cgroup; c != nil {
		cgs = nil
		if _, err := os.Stat(c.Dir); err == nil {
			cgs = []cgroup.Leftover{{Dir: c.Dir, PID: pid}}
		}
	}
	plan := reap.Plan{Targets: targets, Rescan: scan, Cgroups: cgs, Track: tr,
		Signal: unix.SIGTERM, Grace: grace, Log: log, Spare: proc.ID{PID: o.Pgrp, Start: o.Since}}
	commandSignal(o, log)
	var accounted *report.Resources
	if o.Report != nil && len(plan.Cgroups) > 0 {
		accounted = &report.Resources{Sources: map[string]string{}}
		plan.Accounted = accounted
	}
	r := reap.Reap(plan)
	// The registry contain could not remove, now that nothing of the
	// session is left.
	if _, err := registry.PruneRegistries(); err != nil {
		log("registry: %v", err)
	}
	for _, o := range r.Processes {
		log("%d (%s): %s", o.PID, o.Comm, o.Result())
	}
	for _, c := range r.Cgroups {
		log("cgroup %s: %s", c.Dir, c.Result)
	}
	if c := o.Cgroup; c != nil && (c.Leaf != "" || len(c.Enabled) > 0) {
		// The guard itself goes back from contain's leaf with the rest.
		if err := cgroup.Delegated(c.Parent, c.Leaf, c.Enabled).Undo(); err != nil {
			log("%v", err)
		} else {
			log("put %s back as it was (controllers enabled for the run: %s; contain's leaf: %s)", c.Parent, strings.Join(c.Enabled, ", "), cmp.Or(c.Leaf, "none"))
		}
	}
	// After the shim, whose own report has every process it ended, the
	// guard's replaces it only when the guard found something more.
	if o.Report != nil && (o.Shim.PID == 0 || len(r.Processes) > 0 || len(r.Cgroups) > 0) {
		rep := guardedReport(o, pid, r, accounted, statusOf)
		if err := report.Write(o.Report.Path, rep, os.Stderr); err != nil {
			text.Fprintf(os.Stderr, "contain: guard: cannot write the report: %v\n", err)
		}
	}
}

// commandSignal sends COMMAND the timeout signal (-s) where nothing else
// did as contain died: on macOS, which has no Pdeathsig (and on Linux
// with CONTAIN_DISABLE=macos or pdeathsig). On Linux the kernel sent it
// (Pdeathsig), or the shim, COMMAND's parent, did.
func commandSignal(o Orders, log func(string, ...any)) {
	if !o.SignalCommand || o.Shim.PID != 0 || o.Signal == 0 || o.Pgrp == 0 {
		return
	}
	if err := proc.SignalMember(o.Pgrp, o.Since, o.Signal, nil); err == nil {
		log("sent %s to COMMAND %d (%s)", signals.Name(o.Signal), o.Pgrp, proc.CommOf(o.Pgrp))
	}
}

// guardedReport is the report of a run whose contain died: what the guard
// found and did; what only contain knew is absent, with the reason.
func guardedReport(o Orders, pid int, rr reap.Report, accounted *report.Resources, statusOf func(int) (unix.WaitStatus, bool)) *report.Report {
	const onlyContainKnew = "contain was killed: only it knew"
	a := account.Run{WrittenBy: cmp.Or(o.Writer, "guard"), Command: o.Report.Command, ContainPID: pid, Tag: o.Value,
		Absent: map[string]string{"containment": onlyContainKnew + " the layers it had"}}
	a.Ending.Absent = map[string]string{
		"exit_code":            onlyContainKnew + " how COMMAND ended, if it had",
		"contain_exit_status":  "contain was killed",
		"timed_out":            onlyContainKnew + " whether the timeout had fired",
		"killed_after_timeout": onlyContainKnew + " whether --kill-after had fired",
	}
	// The shim reaped COMMAND (before contain died, or as it closed the
	// session after): how it ended is known after all.
	if ws, ok := statusOf(o.Pgrp); ok && o.Pgrp != 0 {
		switch {
		case ws.Exited():
			code := ws.ExitStatus()
			a.Ending.ExitCode = &code
			delete(a.Ending.Absent, "exit_code")
		case ws.Signaled():
			a.Ending.Signal = signals.Name(ws.Signal())
			delete(a.Ending.Absent, "exit_code")
		}
	}
	f := &account.Facts{Started: o.Report.Started, Ended: time.Now()}
	a.Facts = f
	r := &f.Resources
	*r = report.Resources{Sources: map[string]string{}}
	if accounted != nil {
		*r = *accounted
	}
	r.Absent = map[string]string{}
	for field, known := range map[string]bool{
		"cpu_user_seconds": r.CPUUserSeconds != nil, "cpu_system_seconds": r.CPUSystemSeconds != nil,
		"peak_memory_bytes": r.PeakMemoryBytes != nil, "peak_processes": r.PeakProcesses != nil,
		"io_read_bytes": r.IOReadBytes != nil, "io_write_bytes": r.IOWriteBytes != nil,
		"max_process_rss_bytes": false,
	} {
		switch {
		case known:
		case accounted != nil && field != "max_process_rss_bytes":
			r.Absent[field] = "its controller is not enabled in contain's cgroup"
		case accounted != nil:
			r.Absent[field] = "the crash guard reaps none of the session's processes: no rusage"
		default:
			r.Absent[field] = "no cgroup: the crash guard, no parent of the session's processes, has no accounting of them"
		}
	}
	for _, p := range rr.Processes {
		l := report.Leftover{PID: p.PID, Comm: p.Comm, Argv: p.Argv, FoundBy: p.Where(), EndedBy: p.Result()}
		if l.Argv == nil {
			l.Argv = []string{}
		}
		switch {
		case p.Found == reap.FoundInRegistry:
			l.FoundBy = "registry"
		case p.Found == reap.FoundInCgroup:
			l.FoundBy = "cgroup"
		case p.Found == reap.FoundByTag && p.Session == o.Value:
			l.FoundBy = "tag"
		}
		// What was sent, then how it ended: known where the shim reaped
		// it, else unknown (the guard is no parent of the session's).
		var sent string
		switch p.Ending {
		case reap.Killed, reap.Survived:
			sent = signals.Name(unix.SIGKILL)
		case reap.EndedByFirst:
			sent = signals.Name(unix.SIGTERM)
			if p.PID == o.Pgrp && o.Signal != 0 {
				sent = signals.Name(o.Signal) // COMMAND's own, as contain died
			}
		case reap.WasGone:
			if p.PID == o.Pgrp && o.Signal != 0 {
				// COMMAND, spared the guard's first signal: it was sent
				// its own as contain died (Pdeathsig, the shim, the guard).
				sent = signals.Name(o.Signal)
			}
		}
		switch {
		case p.Alive:
			l.EndedBy = "still running"
		case p.Ending == reap.LeftAlone || p.Ending == reap.CannotSignal:
		default:
			ws, reaped := statusOf(p.PID)
			l.EndedBy = proc.EndedBy(sent, ws, reaped)
		}
		if !p.Started.IsZero() {
			l.Started = &report.Time{Time: p.Started}
		}
		l.Absent = map[string]string{
			"ended_after_seconds": onlyContainKnew + " when COMMAND ended",
			"left_process_group":  "not recorded after a crash: the guard ends processes without reading their process group",
			"left_session":        "not recorded after a crash: the guard ends processes without reading their session",
			"held_stdout":         "not recorded after a crash: contain's stdout went with contain",
			"held_stderr":         "not recorded after a crash: contain's stderr went with contain",
		}
		if p.Started.IsZero() {
			l.Absent["started"] = "it ended before the guard could read it"
		}
		f.Leftovers = append(f.Leftovers, l)
		if sent != "" {
			f.EndedByContain = append(f.EndedByContain, crashEnded(l, sent, p.PID == o.Pgrp))
		}
	}
	return account.Build(a)
}

// crashEnded is a process the guard (or the shim) ended after contain
// died, for ended_by_contain: what its leftover entry says.
func crashEnded(l report.Leftover, sent string, command bool) report.Ended {
	e := report.Ended{PID: l.PID, Comm: l.Comm, Argv: l.Argv, Started: l.Started, Command: command,
		Phase: report.PhaseCrash, Signal: sent, EndedBy: l.EndedBy}
	if len(e.Argv) == 0 {
		e.Argv = nil
		e.Absent = map[string]string{"argv": "it ended before the guard could read it"}
	}
	if e.Started == nil {
		if e.Absent == nil {
			e.Absent = map[string]string{}
		}
		e.Absent["started"] = "it ended before the guard could read it"
	}
	return e
}

// PID is the guard's process ID.
func (g *Guard) PID() int { return g.pid }
