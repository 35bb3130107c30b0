package run

import (
	"errors"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/report"
)

// forwarded are the signals contain passes on to the whole group, as on
// Linux (see run_linux.go): every signal whose default action ends a
// process, WINCH and CONT, and SIGINFO (Ctrl-T), which asks a program for
// its status. SIGALRM among them means "time out now".
var (
	forwardedFirst = append(slices.Clone(unixFirst), unix.SIGEMT)
	forwardedLater = append(slices.Clone(unixLater), unix.SIGINFO)
)

// runnerOS: macOS has nothing beyond the process group, the tracking and
// the guard.
type runnerOS struct{}

// complete: nothing but the scans holds the processes that left
// contain's children.
func (r *runner) complete() bool { return false }

// setUp: macOS has no further layer (no cgroup, subreaper or Pdeathsig).
func (r *runner) setUp() []string { return nil }

// strong: nothing keeps the group in sight but contain's scans.
func (r *runner) strong() bool { return false }

// prepareShim and dropShim: macOS has no shim.
func prepareShim() {}
func dropShim()    {}

// started: macOS has no shim. A subreaper is what makes one worth its
// start: XNU re-parents every orphan to launchd, whatever its ancestors.
func (r *runner) started() []string { return nil }

// shimEnded: there is no shim on macOS.
func (r *runner) shimEnded(int, unix.WaitStatus) bool { return false }

// guardable: the reaper waits for COMMAND alone, never for the guard.
func (r *runner) guardable() error { return nil }

// start starts COMMAND in its own process group, in the terminal's
// foreground when contain is.
func (r *runner) start() error {
	path, err := lookPath(r.o.Args[0])
	if err != nil {
		return &StartError{Name: r.o.Args[0], Err: err}
	}
	argv := r.o.Args
	const shell = "/bin/sh"
	// Decided once: a first try that fails to exec (a script without #!)
	// has already given the terminal to its own group, now gone.
	foreground := r.tty != nil && r.tty.foreground() == r.ownPgrp
	for {
		attr := &syscall.SysProcAttr{Setpgid: true}
		if foreground {
			attr.Foreground, attr.Ctty = true, r.tty.fd
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: r.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
		if errors.Is(err, unix.ENOEXEC) && argv[0] != shell {
			path, argv = shell, append([]string{shell, path}, r.o.Args[1:]...)
			continue
		}
		if err != nil {
			return &StartError{Name: r.o.Args[0], Err: err}
		}
		r.pid, r.gaveTTY = pid, attr.Foreground
		return nil
	}
}

// wait waits for COMMAND: contain's only other child is the guard, and
// without a subreaper no orphan becomes contain's.
func (r *runner) wait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, error) {
	return unix.Wait4(r.pid, ws, flags, ru)
}

// There is no cgroup on macOS.
func (r *runner) groupName() string    { return "" }
func (r *runner) groupProcs() []int    { return nil }
func (r *runner) groupHolds(int) error { return unix.ESRCH }
func (r *runner) groupKill() bool      { return false }
func (r *runner) groupPopulated() bool { return false }
func (r *runner) groupEmptied() bool   { return true }
func (r *runner) groupRemove()         {}

// detachAttr starts a detached COMMAND in a new session.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

const detachedWhere = "in a new session"

// maxRSSBytes: macOS gives ru_maxrss in bytes.
func maxRSSBytes(ru *unix.Rusage) uint64 { return uint64(max(ru.Maxrss, 0)) }

// groupResources: macOS has no cgroup.
func (r *runner) groupResources(*report.Resources) bool { return false }
