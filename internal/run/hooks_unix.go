//go:build linux || darwin

package run

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
)

// osHooks is what each Unix supplies to the runner that run_unix.go,
// members_unix.go and limits_unix.go share: the runner's OS part, a type
// of its own per OS that holds the OS's state and reaches the run through
// its r: linuxOS (run_linux.go, limits_linux.go, names_linux.go,
// daemons_linux.go, shim_linux.go: the cgroup, the subreaper, how the
// reaper waits, the shim's failure or loss, the kernel's limits and the
// systemd scope) and darwinOS (run_darwin.go and the files beside it: no
// state). newOS makes the one the OS has (runner.sys); each file that
// defines a type checks it against this contract for the compiler. What
// a hook does where the OS has no such thing is said at its macOS
// definition.
type osHooks interface {
	// The layers.

	// planLayers finds what setUp needs before the crash guard is told
	// of the session (where the cgroup goes).
	planLayers()
	// setUp readies the OS's layers before COMMAND starts (subreaper,
	// cgroup, Pdeathsig) and returns their names.
	setUp() []string
	// strong: the kernel keeps every process of the group in sight by
	// itself (a cgroup), so contain need not scan while COMMAND runs.
	strong() bool
	// complete: contain's children and the cgroup alone hold every
	// process of the group (a cgroup, a subreaper, the shim).
	complete() bool
	// guardable: what the crash guard needs of this run, or why not.
	guardable() error

	// The start.

	// startUnder starts COMMAND under the shim where it is used (done:
	// true, with the start's outcome); else startAttr adds to the start
	// (Pdeathsig, the cgroup), and startRefused takes a start error the
	// OS can retry without a layer (true: try again).
	startUnder(path string, foreground bool) (done bool, err error)
	startAttr(attr *syscall.SysProcAttr)
	startRefused(err error) bool
	// forkCommand starts COMMAND (contain's own clone, else Go's fork)
	// with attr; execErr: the error is the exec's.
	forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (pid int, err error, execErr bool)
	// started finishes what the start began and returns the layers it
	// adds.
	started() []string
	// heldIn is the cgroup a held session's processes are to start in
	// ("": none).
	heldIn() string
	// marker is the session's marker COMMAND was started with (package
	// marker): its identity for the registry (0: none it can keep), and
	// what tells a process that holds it, for the scans (nil: none).
	marker() (ino uint64, holds func(pid int) bool)

	// The reaper.

	// wait waits for a child of contain (not the guard); reapWait also
	// names it, for -v.
	wait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, error)
	reapWait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, string, error)
	// shimEnded: wpid, just reaped, was the shim (its end handled).
	shimEnded(wpid int, ws unix.WaitStatus) bool
	// shimReapedCPU: the CPU time of what the shim reaped.
	shimReapedCPU() time.Duration
	// removeEmptyGroup: COMMAND has ended and no child of contain is
	// left; the kernel's group is removed now if that shows it empty
	// (true), before the close (see endGuardEarly).
	removeEmptyGroup() bool

	// The daemons (--allow-daemons: the rest is daemons_*.go's).

	// releaseFromShim tells the shim that a daemon left the session.
	releaseFromShim(p proc.Entry)

	// The limits the kernel holds.

	// kernelLimits sets what the kernel can hold of the limits (the
	// cgroup's memory.max, pids.max, cpu.max); kernelWhy says why it
	// does not hold one; kernelEvents reads what it did once COMMAND
	// ended (an OOM kill, refused forks), for the limit enforcer.
	kernelLimits(w *limit.Watch)
	kernelWhy(k limit.Kind) string
	kernelEvents() limit.Outcome
	// forksRefused is how many forks the kernel has refused for the
	// process limit so far (pids.events max; 0: none, or no cgroup).
	forksRefused() uint64
	// sampleGroup measures the tree from its cgroup (false: none).
	sampleGroup(l *limiter, s *limit.Sample) bool
	// freezable: the tree can be stopped at once (cgroup.freeze), by
	// freeze; frozen says whether it is.
	freezable() bool
	freeze(on bool) error
	frozen() bool
}
