package run

import (
	"syscall"

	"golang.org/x/sys/unix"
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

// preparedOS: macOS has no shim.
type preparedOS struct{}

func (p *Prepared) prepareShim() {}
func (p *Prepared) dropShim()    {}

// shimLink: the runner's shim is noShim on macOS, where there is none.
type shimLink = noShim

// noShim is no shim.
type noShim struct{}

// started: macOS has no shim. A subreaper is what makes one worth its
// start: XNU re-parents every orphan to launchd, whatever its ancestors.
func (r *runner) started() []string { return nil }

// shimEnded: there is no shim on macOS.
func (r *runner) shimEnded(int, unix.WaitStatus) bool { return false }

// removeEmptyGroup: macOS has no kernel group to remove.
func (r *runner) removeEmptyGroup() bool { return false }

// guardable: the reaper waits for COMMAND alone, never for the guard.
func (r *runner) guardable() error { return nil }

// guardSignalsCommand: macOS has no Pdeathsig; the crash guard sends
// COMMAND its -s signal when contain dies.
func guardSignalsCommand() bool { return true }

// startUnder: macOS has no shim.
func (r *runner) startUnder(string, bool) (bool, error) { return false, nil }

// startAttr: macOS adds nothing to the process group and the terminal.
func (r *runner) startAttr(*syscall.SysProcAttr) {}

// startRefused: nothing is retried on macOS.
func (r *runner) startRefused(error) bool { return false }

// wait waits for COMMAND: contain's only other child is the guard, and
// without a subreaper no orphan becomes contain's.
func (r *runner) wait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, error) {
	return unix.Wait4(r.pid, ws, flags, ru)
}

// detachAttr starts a detached COMMAND in a new session.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

const detachedWhere = "in a new session"

// ownNofile: macOS's children start through Go's ForkExec alone, which
// gives them the user's RLIMIT_NOFILE.
func ownNofile() {}

// planLayers: macOS has nothing to find before the guard is told.
func (r *runner) planLayers() {}

// forkCommand starts COMMAND with Go's fork and exec.
func (r *runner) forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (pid int, err error, execErr bool) {
	r.guardReady()
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: r.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
	return pid, err, false
}

// onMainThread: macOS has no thread ID to compare; the runtime keeps the
// main goroutine on the main thread during package initialisation.
func onMainThread() bool { return true }
