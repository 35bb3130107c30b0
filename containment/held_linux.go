package containment

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

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
// its cgroup). The cgroup is used only where the kernel lets this
// program start a process in it (CLONE_INTO_CGROUP needs write access to
// the common ancestor of both cgroups): a start cannot be tried again
// once os/exec has tried it, so a throwaway clone into it, which fails
// at its exec, answers first. Where it is refused the commands start
// beside it, and the session holds them by their tag.
func (a *heldAttrs) open(tag, cgroup string, terminal bool) {
	a.tag, a.cgfd = tag, -1
	if terminal {
		a.tty = controllingTerminal()
	}
	if cgroup == "" {
		return
	}
	fd, err := unix.Open(cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if realRoot() {
		// Root outside any user namespace may write every cgroup.procs,
		// and contain run clones its COMMAND into its cgroup the same
		// way: no probe.
		a.cgfd = fd
		return
	}
	_, err = syscall.ForkExec(filepath.Join(cgroup, "contain-no-such-program"), nil,
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}})
	if !errors.Is(err, unix.ENOENT) {
		unix.Close(fd)
		return
	}
	a.cgfd = fd
}

// realRoot reports whether the program runs as root in the initial user
// namespace (its uid_map maps every ID to itself).
func realRoot() bool {
	if unix.Geteuid() != 0 {
		return false
	}
	b, err := os.ReadFile("/proc/self/uid_map")
	f := strings.Fields(string(b))
	return err == nil && len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// warm starts the forker's thread while the holder starts, so that the
// first command does not wait for a thread to be made.
func (a *heldAttrs) warm() { go onForker(func() error { return nil }) }

// add puts Pdeathsig and the cgroup in a command's start. Pdeathsig is
// SIGTERM, as contain run's COMMAND gets its -s signal when contain dies:
// the holder, which sees the program's pipe close, ends the rest.
func (a *heldAttrs) add(attr *syscall.SysProcAttr) {
	if attr.Pdeathsig == 0 {
		attr.Pdeathsig = syscall.SIGTERM
	}
	if a.cgfd >= 0 && !attr.UseCgroupFD {
		attr.UseCgroupFD, attr.CgroupFD = true, a.cgfd
	}
}

// start starts cmd on the forker's thread: Pdeathsig fires when the
// thread that forked the child ends, not the process (golang/go#27505),
// and the forker's thread never ends.
func (a *heldAttrs) start(cmd *exec.Cmd) error { return onForker(cmd.Start) }

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

// takeTerminal gives the terminal back to the program's process group,
// from the forker's thread with SIGTTOU blocked there (the program, in
// the background now, would else be stopped by it), so that the
// program's own signal handling is not touched.
func (a *heldAttrs) takeTerminal() {
	onForker(func() error {
		var set, old unix.Sigset_t
		set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
			return err
		}
		defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
		return unix.IoctlSetPointerInt(int(a.tty.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
	})
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

// The forker: one goroutine locked to its thread for the program's
// life, on which every command of every Group starts.
var forker struct {
	once sync.Once
	work chan func()
}

// onForker runs f on the forker's thread.
func onForker(f func() error) error {
	forker.once.Do(func() {
		forker.work = make(chan func())
		go func() {
			runtime.LockOSThread() // and never unlocked: the thread lives as long as the program
			for w := range forker.work {
				w()
			}
		}()
	})
	done := make(chan error, 1)
	forker.work <- func() { done <- f() }
	return <-done
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
