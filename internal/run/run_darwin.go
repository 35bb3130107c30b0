package run

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// darwinOS is the runner's OS part on macOS (osHooks), which has nothing
// beyond the process group, the tracking and the guard: it holds no state
// of its own. r is the run it serves.
type darwinOS struct {
	r *runner
}

var _ osHooks = (*darwinOS)(nil)

// newOS is the OS part of run r.
func newOS(r *runner) osHooks { return &darwinOS{r: r} }

// complete: nothing but the scans holds the processes that left
// contain's children.
func (sys *darwinOS) complete() bool { return false }

// setUp: macOS has no further layer (no cgroup, subreaper or Pdeathsig).
func (sys *darwinOS) setUp() []string { return nil }

// strong: nothing keeps the group in sight but contain's scans.
func (sys *darwinOS) strong() bool { return false }

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
func (sys *darwinOS) started() []string { return nil }

// heldIn: macOS has no cgroup to start a held session's processes in.
func (sys *darwinOS) heldIn() string { return "" }

// shimEnded: there is no shim on macOS.
func (sys *darwinOS) shimEnded(int, unix.WaitStatus) bool { return false }

// removeEmptyGroup: macOS has no kernel group to remove.
func (sys *darwinOS) removeEmptyGroup() bool { return false }

// guardable: the reaper waits for COMMAND alone, never for the guard.
func (sys *darwinOS) guardable() error { return nil }

// guardSignalsCommand: macOS has no Pdeathsig; the crash guard sends
// COMMAND its -s signal when contain dies.
func guardSignalsCommand() bool { return true }

// startUnder: macOS has no shim.
func (sys *darwinOS) startUnder(string, bool) (bool, error) { return false, nil }

// startAttr: macOS adds nothing to the process group and the terminal.
func (sys *darwinOS) startAttr(*syscall.SysProcAttr) {}

// startRefused: nothing is retried on macOS.
func (sys *darwinOS) startRefused(error) bool { return false }

// wait waits for COMMAND: contain's only other child is the guard, and
// without a subreaper no orphan becomes contain's.
func (sys *darwinOS) wait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, error) {
	return unix.Wait4(sys.r.pid, ws, flags, ru)
}

// detachAttr starts a detached COMMAND in a new session.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

const detachedWhere = "in a new session"

// ownNofile: macOS's children start through Go's ForkExec alone, which
// gives them the user's RLIMIT_NOFILE.
func ownNofile() {}

// planLayers: macOS has nothing to find before the guard is told.
func (sys *darwinOS) planLayers() {}

// forkCommand starts COMMAND with Go's fork and exec.
func (sys *darwinOS) forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (pid int, err error, execErr bool) {
	sys.r.guardReady()
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: sys.r.o.Env, Files: []uintptr{0, 1, 2}, Sys: attr})
	return pid, err, false
}

// onMainThread: macOS has no thread ID to compare; the runtime keeps the
// main goroutine on the main thread during package initialisation.
func onMainThread() bool { return true }

// marker: no marker is placed on macOS yet (package marker reads
// descriptors on Linux; proc_info's are issue 40's next step).
func (sys *darwinOS) marker() uint64 { return 0 }
