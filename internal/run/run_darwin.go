package run

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/marker"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
)

// darwinOS is the runner's OS part on macOS (osHooks), which has nothing
// beyond the process group, the tracking, the session's marker and the
// guard. r is the run it serves.
type darwinOS struct {
	r    *runner
	mark track.Marker // the session's marker (none: zero)
	kept int          // contain's end of it, open until contain exits
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
//
// COMMAND gets the session's marker at marker.FD (placeMarker), which the
// scans find in every process that keeps it, whatever else it drops.
func (sys *darwinOS) forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (pid int, err error, execErr bool) {
	sys.r.guardReady()
	files := []uintptr{0, 1, 2}
	if !sys.r.o.Hold && sys.mark == (track.Marker{}) {
		if w, err := sys.placeMarker(); err == nil {
			defer unix.Close(w)
			files = marker.Files(w)
		} else {
			sys.r.log("no marker descriptor for the session: %v", err)
		}
	}
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: sys.r.o.Env, Files: files, Sys: attr})
	return pid, err, false
}

// onMainThread: macOS has no thread ID to compare; the runtime keeps the
// main goroutine on the main thread during package initialisation.
func onMainThread() bool { return true }

// marker: the marker's pair of pipe handles tells a holder, through
// proc_info (proc.Pipes); the registry keeps nothing of it (0): once
// contain and its guard are gone, nothing holds the kept end, and the
// pair names nothing reap could trust (lineage is what reap has).
func (sys *darwinOS) marker() (uint64, func(pid int) bool) {
	if sys.mark == (track.Marker{}) {
		return 0, nil
	}
	m := sys.mark
	return 0, func(pid int) bool {
		pipes, err := proc.Pipes(pid)
		return err == nil && m.HeldIn(pipes)
	}
}

// placeMarker makes the session's marker (package marker, track.Marker):
// a pipe whose write end w COMMAND gets at marker.FD and whose read end
// is held open, close-on-exec, until contain exits, so that no other pipe
// end can take its address and show the same pair of handles. The crash
// guard made it before it started (guard.MarkerEnd) and holds the read
// end too, so that the pair still names the marker, and the guard's
// scans find its holders, after contain died; without a guard, contain
// makes it here, and the guard is told nothing of it. The caller closes w
// once COMMAND is started.
func (sys *darwinOS) placeMarker() (w int, err error) {
	if w = sys.r.guard.MarkerEnd(); w >= 0 {
		held, kept, err := proc.PipeHandles(os.Getpid(), w)
		if err != nil {
			unix.Close(w)
			return -1, err
		}
		sys.mark = track.Marker{Held: held, Kept: kept}
		if err := sys.r.guard.MarkerPair(sys.mark); err != nil {
			sys.r.log("cannot tell the crash guard the session's marker: %v", err)
		}
		return w, nil
	}
	if !marker.Fits() {
		return -1, errors.New("the limit of open files leaves no marker descriptor")
	}
	if !marker.Free() {
		return -1, errors.New("descriptor 205 is in use (inherited): it stays COMMAND's")
	}
	var p [2]int
	syscall.ForkLock.Lock()
	err = unix.Pipe(p[:])
	if err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	syscall.ForkLock.Unlock()
	if err != nil {
		return -1, err
	}
	held, kept, err := proc.PipeHandles(os.Getpid(), p[1])
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return -1, err
	}
	sys.mark, sys.kept = track.Marker{Held: held, Kept: kept}, p[0]
	return p[1], nil
}
