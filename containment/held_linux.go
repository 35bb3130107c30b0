package containment

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/procfs"
)

// heldAttrs is what every command of a Group's session starts with on
// Linux: the holder's tag, the session's cgroup (a descriptor, -1: none)
// and the terminal when Options.Terminal asks for it (nil: none).
type heldAttrs struct {
	tag  string
	cgfd int
	tty  *os.File
}

// open readies the attributes once the holder holds the session (tag,
// its cgroup, in) and reports whether the commands can start in it: not
// where there is no cgroup, or it cannot be opened, and the Group falls
// back to a copy per command. A Group holds sessions only where the
// program may start processes in a cgroup made in its own (holds,
// cgroupWritable), as contain run clones its COMMAND into its own.
func (a *heldAttrs) open(tag, in string, _ *os.Process, terminal bool) bool {
	a.tag, a.cgfd = tag, -1
	if terminal {
		a.tty = controllingTerminal()
	}
	if in == "" {
		return false
	}
	if own, err := ownCgroup(); err != nil || !mayStartIn(own, in) {
		return false
	}
	if fd, err := unix.Open(in, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		a.cgfd = fd
	}
	return a.cgfd >= 0
}

// mayStartIn reports whether the program, in cgroup own, may start a
// process in cgroup in (CLONE_INTO_CGROUP): it needs write access to the
// cgroup.procs of in and of the two's common ancestor. The holder makes
// its cgroup in its own, the program's, which cgroupWritable checked;
// but a holder asked for a limit its cgroup cannot hold (the program is
// in it too) may have had systemd move it into a scope of its own, whose
// common ancestor with the program's cgroup is the system's: the Group
// then holds each command in a copy of its own, as an ordinary user's
// Group did before, rather than fail every Start.
func mayStartIn(own, in string) bool {
	anc := commonAncestor(own, in)
	if anc == "" {
		return false
	}
	for _, dir := range []string{anc, in} {
		if unix.Faccessat(unix.AT_FDCWD, filepath.Join(dir, "cgroup.procs"), unix.W_OK, unix.AT_EACCESS) != nil {
			return false
		}
	}
	return true
}

// commonAncestor is the deepest directory that holds both a and b
// (absolute, clean paths), "" when they share none.
func commonAncestor(a, b string) string {
	a, b = filepath.Clean(a), filepath.Clean(b)
	for {
		if b == a || strings.HasPrefix(b, a+"/") || a == "/" {
			return a
		}
		parent := filepath.Dir(a)
		if parent == a {
			return ""
		}
		a = parent
	}
}

// holderEnded: should the holder be killed, its crash guard ends the
// cgroup, and every command with it.
func (g *Group) holderEnded() {}

// ownCgroup is the program's own cgroup (cgroup.OwnDir), read once:
// where it first starts a command.
var ownCgroup = sync.OnceValues(cgroup.OwnDir)

// cgroupWritable reports whether the program may make a cgroup in its
// own and start processes in it (CLONE_INTO_CGROUP asks for write
// access to the cgroup.procs of the common ancestor, its own): root in
// the initial user namespace, or an ordinary user (or root of a user
// namespace) in a cgroup delegated to it, as systemd delegates a user's
// own manager's cgroups (user@UID.service and the scopes below it: a
// desktop's terminals, rootless containers). The holder makes the
// session's cgroup there (cgroup.New). Not where the hierarchy is read
// only (a container's), not as an ordinary user in a cgroup not
// delegated (an ssh login's session scope is root's).
func cgroupWritable() bool {
	dir, err := ownCgroup()
	if err != nil {
		return false
	}
	return unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS) == nil &&
		unix.Faccessat(unix.AT_FDCWD, filepath.Join(dir, "cgroup.procs"), unix.W_OK, unix.AT_EACCESS) == nil
}

// add puts the cgroup in a command's start: it is born in the session's
// cgroup, which holds it whatever it does (no Pdeathsig is needed: should
// the program die, even between the fork and the exec, the holder sees
// its pipe close and ends the cgroup).
func (a *heldAttrs) add(attr *syscall.SysProcAttr) {
	if a.cgfd >= 0 && !attr.UseCgroupFD {
		attr.UseCgroupFD, attr.CgroupFD = true, a.cgfd
	}
}

// start starts cmd.
func (a *heldAttrs) start(cmd *exec.Cmd) error { return cmd.Start() }

// giveTerminal makes a command start in the terminal's foreground when
// the program is there (false: it is not, or has no terminal).
func (a *heldAttrs) giveTerminal(attr *syscall.SysProcAttr) bool {
	if a.tty == nil {
		return false
	}
	fg, err := unix.IoctlGetInt(int(a.tty.Fd()), unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return false
	}
	attr.Foreground, attr.Ctty = true, int(a.tty.Fd())
	return true
}

// takeTerminal gives the terminal back to the program's process group.
func (a *heldAttrs) takeTerminal() {
	withoutSIGTTOU(func() { unix.IoctlSetPointerInt(int(a.tty.Fd()), unix.TIOCSPGRP, unix.Getpgrp()) })
}

// settings reads the terminal's settings (nil: unreadable), kept when a
// command is given the terminal, before it can change them.
func (a *heldAttrs) settings() *unix.Termios {
	s, err := unix.IoctlGetTermios(int(a.tty.Fd()), unix.TCGETS)
	if err != nil {
		return nil
	}
	return s
}

// putBack sets the terminal's settings to s, those it had when a command
// that a signal ended was given it (a program killed in raw mode leaves
// the terminal without echo), once the output already written is sent
// (TCSADRAIN); only while the program has the terminal, as takeTerminal
// gave it back, and when they differ.
func (a *heldAttrs) putBack(s *unix.Termios) {
	fd := int(a.tty.Fd())
	if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || fg != unix.Getpgrp() {
		return
	}
	if now, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil && *now == *s {
		return
	}
	withoutSIGTTOU(func() { unix.IoctlSetTermios(fd, unix.TCSETSW, s) })
}

// withoutSIGTTOU runs change, a change of the terminal, with SIGTTOU
// blocked on this thread alone (the program, outside the foreground,
// would else be stopped by it), so that the program's own signal
// handling is not touched.
func withoutSIGTTOU(change func()) {
	// The mask is this thread's: the goroutine stays on it until the mask
	// is put back.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	if unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old) != nil {
		return
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	change()
}

// close lets go of the cgroup's descriptor once the holder has ended
// (Close). The terminal stays open: a Wait may still give it back.
func (a *heldAttrs) close() {
	if a.cgfd >= 0 {
		unix.Close(a.cgfd)
		a.cgfd = -1
	}
}

// controllingTerminal opens the program's controlling terminal (nil:
// none).
func controllingTerminal() *os.File {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return f
}

// startNow is the time now in the unit of a process's start time (clock
// ticks since boot), rounded up.
func startNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return ^uint64(0)
	}
	tick := int64(1e9) / int64(procfs.TicksPerSecond)
	return uint64((ts.Nano() + tick - 1) / tick)
}

// waitEnded waits until process pid, a child, has ended, and leaves it
// unreaped; false when it is no child (reaped already).
func waitEnded(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return false
		}
		return true
	}
}
