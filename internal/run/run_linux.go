package run

import (
	"errors"
	"syscall"

	"github.com/contain-cli/contain/internal/builtin"
	"github.com/contain-cli/contain/internal/marker"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/layers"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/scope"
	"github.com/contain-cli/contain/internal/shim"
)

// linuxOS is the runner's OS part on Linux (osHooks): the layers beyond
// the process group and the tracking (subreaper, cgroup, Pdeathsig, the
// shim), how the reaper waits, and the limits the cgroup holds. r is the
// run it serves.
type linuxOS struct {
	r          *runner
	kmsg       int          // the kernel's log, open at the run's start (openKmsg) where the kernel holds memory; 0: not open
	cg         *cgroupGroup // also the run's group; nil: none
	cgPlan     *cgroup.Plan // where it is made (planLayers)
	cgPlanErr  error
	subreaper  bool
	waitFlags  int                   // WNOTHREAD: the guard, a child of another thread, is not waited for
	shimFailed bool                  // the shim could not be started
	shimLost   bool                  // the shim ended before COMMAND: tracking alone holds the session
	limitWhy   map[limit.Kind]string // why the kernel does not hold a limit
	scope      *scope.Scope          // the systemd scope contain moved into for the limits; nil: none
	ownMarker  uint64                // the marker contain's own start of COMMAND placed (no shim, no cgroup)
}

// marker is the identity of the session's marker: the shim's, or the one
// contain placed itself where it started COMMAND without a cgroup.
func (sys *linuxOS) marker() (uint64, func(pid int) bool) {
	ino := sys.ownMarker
	if sys.r.shim.PID() != 0 {
		ino = sys.r.shim.Marker()
	}
	if ino == 0 {
		return 0, nil
	}
	// Its descriptor at marker.FD: one read per new process.
	return ino, func(pid int) bool { return marker.Of(pid) == ino }
}

var _ osHooks = (*linuxOS)(nil)

// newOS is the OS part of run r.
func newOS(r *runner) osHooks { return &linuxOS{r: r} }

// guardSignalsCommand reports whether the crash guard, not the kernel
// (Pdeathsig) nor the shim, sends COMMAND its -s signal when contain
// dies: where Pdeathsig is turned off.
func guardSignalsCommand() bool { return layers.Disabled("pdeathsig") }

// planLayers finds what setUp needs before the crash guard is told of the
// session: where the cgroup goes (reading /proc and the mounts takes
// longer than making it).
func (sys *linuxOS) planLayers() {
	if !layers.Disabled("cgroup") {
		sys.cgPlan, sys.cgPlanErr = cgroup.NewPlan(sys.r.self)
	}
}

// setUp adds the layers Linux has beyond the process group and the
// tracking: subreaper, cgroup, and Pdeathsig (set at the start).
func (sys *linuxOS) setUp() []string {
	r := sys.r
	var on []string
	switch {
	case r.o.Hold: // no COMMAND: the starter's to set on each
	case layers.Disabled("pdeathsig"):
		r.log("pdeathsig turned off by CONTAIN_DISABLE")
	default:
		on = append(on, "pdeathsig")
	}
	switch {
	case r.o.Hold:
		// What a held session holds are no descendants of the holder.
	case layers.Disabled("subreaper"):
		r.log("subreaper turned off by CONTAIN_DISABLE")
	default:
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			r.log("cannot become a child subreaper: %v (tracking descendants by scans)", err)
		} else {
			sys.subreaper = true
			on = append(on, "subreaper")
		}
	}
	switch {
	case layers.Disabled("cgroup"):
		r.log("cgroup turned off by CONTAIN_DISABLE")
	default:
		var cg *cgroup.Group
		err := sys.cgPlanErr
		if err == nil {
			cg, err = sys.cgPlan.Make()
		}
		if err != nil {
			if r.o.Limits.Memory > 0 || r.o.Limits.Pids > 0 || r.o.Limits.CPUs > 0 {
				r.log("%v", err) // systemd may make one for the limits (kernelLimits)
			} else {
				r.log("%v (falling back to the shim, a subreaper above COMMAND, and tracking)", err)
			}
		} else {
			sys.cg = &cgroupGroup{cg: cg, log: r.log, collect: r.o.Collect}
			r.grp = sys.cg
		}
	}
	return on
}

// strong reports whether the kernel keeps every process of the group in
// sight by itself (the cgroup), so that contain need not scan while
// COMMAND runs. A subreaper does that only while contain lives; the
// guard, after a crash, needs what scans remember.
func (sys *linuxOS) strong() bool { return sys.cg != nil && !sys.cg.gone }

// complete reports whether contain's children and the cgroup alone hold
// every process of the group: with a cgroup, or as subreaper.
func (sys *linuxOS) complete() bool {
	return sys.strong() || sys.subreaper || sys.r.shim.PID() != 0 && !sys.shimLost
}

// useShim reports whether COMMAND is to be started under the shim: where
// no cgroup holds the session, and contain's main runs (only contain's
// binary can be the shim).
func (sys *linuxOS) useShim() bool {
	return sys.cg == nil && sys.r.o.Prepared != nil && !sys.shimFailed && !layers.Disabled("shim") && !sys.r.o.Hold
}

// heldIn is the cgroup a held session's processes are to start in: the
// run's own ("": none).
func (sys *linuxOS) heldIn() string {
	if sys.cg == nil {
		return ""
	}
	return sys.cg.cg.Dir
}

// started finishes what the start began: the shim is adopted by the
// tracker (its children are members, never it), and its reports are
// relayed. It returns the layers it adds.
func (sys *linuxOS) started() []string {
	r := sys.r
	s := r.shim.ID()
	if s.PID == 0 {
		return nil // no shim
	}
	r.track.Adopt(s.PID, s.Start)
	// Its records are what contain's reaper would have seen had COMMAND
	// been its child: COMMAND's stops and end go to the main loop, the
	// others' ends to the report.
	go r.shim.Relay(shim.Receiver{
		Stopped: func(ws unix.WaitStatus) { r.events <- waitEvent{status: ws} },
		Exited:  func(ws unix.WaitStatus, more bool) { r.events <- waitEvent{status: ws, more: more} },
		Reaped:  func(pid int, ws unix.WaitStatus) { r.reapedOne(pid, "", ws, nil) },
	})
	go r.shim.Watch(r.pid, sys.adopted)
	r.log("shim: PID %d, a subreaper above COMMAND that outlives contain", s.PID)
	return []string{"shim"}
}

// removeEmptyGroup removes the run's cgroup where it has one of its own
// (not a systemd scope, which is systemd's to remove, and which only
// limits ask for). The kernel's rmdir is the proof that it is empty: it
// refuses while any process is in it (one moved in from outside, one
// that is no descendant of contain's) or a group below it (a nested
// contain run's). What reads or writes the group by its path from then on
// (the main loop, acting on a signal that came as COMMAND ended) finds it
// removed (cgroupGroup.early), and the close finds it gone (emptied).
func (sys *linuxOS) removeEmptyGroup() bool {
	if !sys.strong() || cgroup.IsScope(sys.cg.cg.Dir) {
		return false
	}
	if unix.Rmdir(sys.cg.cg.Dir) != nil {
		return false
	}
	sys.cg.early.Store(true)
	return true
}

// guardable checks what the guard needs of this run: the reaper on the
// main thread, so that it can wait with __WNOTHREAD and never take the
// guard, a child of another thread, for one of its own.
func (sys *linuxOS) guardable() error {
	if unix.Gettid() != sys.r.self {
		return errors.New("not on the main thread")
	}
	sys.waitFlags = unix.WNOTHREAD
	return nil
}

// startUnder starts COMMAND under the shim where it is used (done: true,
// with the start's outcome). A shim that cannot be started is said and
// dropped, and COMMAND starts without it: still contained while contain
// lives; only the crash promise rests on the scans again.
func (sys *linuxOS) startUnder(path string, foreground bool) (done bool, err error) {
	r := sys.r
	if sys.useShim() {
		r.guardReady()
		err := sys.startShim(path, foreground)
		if err == nil || errors.As(err, new(*StartError)) {
			return true, err
		}
		r.log("cannot start the shim: %v (starting COMMAND without it)", err)
		if r.shim.PID() != 0 {
			r.shim.Kill()
			// The guard was told of it: it is told there is none, so
			// that it sends COMMAND its signal itself should contain die.
			if err := r.guard.Shim(0, 0); err != nil {
				r.log("cannot tell the crash guard of the shim: %v", err)
			}
		}
		r.shim, sys.shimFailed = noShim{}, true
	}
	r.o.Prepared.dropShim() // started early for nothing: there is a cgroup
	return false, nil
}

// startAttr adds Pdeathsig and the cgroup to COMMAND's start. When contain
// dies, COMMAND first gets the timeout signal, as from GNU timeout, so
// that it can clean up; the guard ends the rest. Without a guard there is
// no second chance: SIGKILL.
func (sys *linuxOS) startAttr(attr *syscall.SysProcAttr) {
	switch {
	case layers.Disabled("pdeathsig"):
	case sys.r.guard.guarding():
		attr.Pdeathsig = sys.r.o.Signal
	default:
		attr.Pdeathsig = syscall.SIGKILL
	}
	if sys.cg != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, sys.cg.cg.FD
	}
}

// startRefused handles a clone into the cgroup that the kernel refuses (no
// permission on a common ancestor, a threaded or busy group): the cgroup
// goes, and the start is tried again without it (true).
func (sys *linuxOS) startRefused(err error) bool {
	r := sys.r
	if sys.cg == nil || !cgroupRefusal(err) {
		return false
	}
	r.log("cannot start inside cgroup %s: %v (retrying without it)", sys.cg.cg.Dir, err)
	sys.cg.remove()
	sys.cg, r.grp = nil, noGroup{}
	sys.sampled("the kernel refused to start COMMAND in the run's cgroup")
	return true
}

// cgroupRefusal reports whether a start error may come from the kernel
// refusing CLONE_INTO_CGROUP. exec errors can look the same (EACCES); a
// retry without the cgroup then fails the same way and is reported as is.
func cgroupRefusal(err error) bool {
	// E2BIG: a kernel before 5.7 knows no cgroup in clone3's arguments.
	// (Where COMMAND starts with Go's fork, an exec's error cannot be told
	// from the clone's: one of these is then taken for a refusal too, and
	// the retry without the cgroup fails as the first did.)
	for _, e := range []error{unix.EACCES, unix.EPERM, unix.EBUSY, unix.EOPNOTSUPP, unix.ENOSYS, unix.EINVAL, unix.EROFS, unix.ENODEV, unix.E2BIG} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// wait waits for any child of contain (the orphans it adopts as subreaper
// included), not the guard.
func (sys *linuxOS) wait(ws *unix.WaitStatus, flags int, ru *unix.Rusage) (int, error) {
	return unix.Wait4(-1, ws, flags|sys.waitFlags, ru)
}

// detachAttr starts a detached COMMAND in a new session.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

const detachedWhere = "in a new session"

// ownNofile gives contain run back the RLIMIT_NOFILE soft limit it was
// started with, which the Go runtime raised at start-up (to the hard limit
// less one), so that every child inherits the user's limit, however it
// was started: Go's ForkExec restores it in its children, builtin.Spawn's
// children (the crash guard's waiter, the keeper, and so COMMAND) would
// not. The runtime keeps the original where only syscall.Exec reads it:
// an Exec that cannot succeed (an empty path: ENOENT) puts it back and
// forgets it. contain run needs few descriptors (its tests run it under
// 64).
func ownNofile() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Max == 0 || lim.Cur != lim.Max-1 {
		return // not raised by the runtime
	}
	syscall.Exec("", nil, nil)
}

// forkCommand starts COMMAND (path, argv, with attr's process group,
// terminal, Pdeathsig and cgroup): with builtin.Spawn where there is one
// (linux/amd64, Linux 5.5), which the calling thread waits for only until
// the exec, as for Go's fork (CLONE_VFORK), with none of Go's resetting of
// the runtime's signal handlers one by one in the child; else, or with
// CONTAIN_DISABLE=spawn, Go's syscall.ForkExec (not os/exec:
// os.StartProcess first probes whether clone can return a pidfd by
// starting a throwaway child, a tenth of contain run -- true). execErr:
// the error is the exec's, not the clone's (never a cgroup's refusal).
func (sys *linuxOS) forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (pid int, err error, execErr bool) {
	r := sys.r
	// A Run of another program (a test's) has no Prepared, and so no
	// ownNofile: Go's fork gives its COMMAND the user's RLIMIT_NOFILE.
	if r.o.Prepared != nil && !layers.Disabled("spawn") {
		// Made ready while the crash guard may still be executing; started
		// once it waits.
		moves := []builtin.Move{{Src: 0, Dst: 0}, {Src: 1, Dst: 1}, {Src: 2, Dst: 2}}
		if sys.cg == nil && !r.o.Hold && sys.ownMarker == 0 {
			// No cgroup holds the session: COMMAND gets its marker
			// (package marker), which reap finds every holder of.
			if w, ino, err := marker.New(); err == nil {
				defer unix.Close(w)
				moves, sys.ownMarker = append(moves, builtin.Move{Src: w, Dst: marker.FD}), ino
			}
		}
		sp, err := builtin.NewSpawner(builtin.Spec{Path: path, Argv: argv, Env: r.o.Env,
			Moves:     moves,
			Pdeathsig: attr.Pdeathsig, Foreground: attr.Foreground, Ctty: attr.Ctty,
			UseCgroupFD: attr.UseCgroupFD, CgroupFD: attr.CgroupFD, Vfork: true})
		var c *builtin.Child
		if err == nil {
			r.guardReady()
			c, err = sp.Start()
		}
		switch {
		case err == nil:
			if err := c.Executed(); err != nil {
				for { // it exited 127
					if _, werr := unix.Wait4(c.Pid, nil, 0, nil); werr != unix.EINTR {
						break
					}
				}
				return 0, err, true
			}
			return c.Pid, nil, false
		case !errors.Is(err, builtin.ErrNoSpawn):
			return 0, err, false
		}
	}
	r.guardReady()
	files := []uintptr{0, 1, 2}
	sys.ownMarker = 0
	if sys.cg == nil && !r.o.Hold {
		if w, ino, err := marker.New(); err == nil {
			defer unix.Close(w)
			files, sys.ownMarker = marker.Files(w), ino
		}
	}
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: r.o.Env, Files: files, Sys: attr})
	return pid, err, false
}

// onMainThread reports whether the calling thread is the main thread (the
// thread group's leader).
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }
