package platform

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/session"
)

// GuardCommand is argv[1] of the guard: contain itself, run again.
const GuardCommand = "__guard"

// guardGrace caps the guard's grace period: nothing of the group may
// outlive contain by more than a second.
const guardGrace = 500 * time.Millisecond

// guard is the process that kills the group if contain dies without closing
// it (SIGKILL, OOM). It runs in its own session, so that a kill of contain's
// process group spares it, and it carries contain's own environment, not
// the session's tag, so that it is no member of the session. It waits for
// the end of a pipe that only contain holds open: EOF means contain died.
// A normal run ends it with SIGKILL once the group is empty.
type guard struct {
	pid int
	w   *os.File
}

// startGuard starts the guard for the session value of contain run r. It is
// called off the main thread: the reaper (main thread, __WNOTHREAD) must
// not see it among its children.
func startGuard(value string, command int, grace time.Duration, verbose bool) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return nil, err
	}
	defer null.Close()
	stderr := null
	if verbose {
		stderr = os.Stderr
	}
	since := "0"
	if st, err := readStat(command, nil); err == nil && st.PGRP == command {
		since = strconv.FormatUint(st.Start, 10)
	} else {
		command = 0 // gone already: its group is of no use
	}
	args := []string{"contain", GuardCommand, value, strconv.Itoa(os.Getpid()), grace.String(), strconv.FormatBool(verbose),
		strconv.Itoa(command), since}
	pid, err := syscall.ForkExec(exe, args, &syscall.ProcAttr{
		Env:   append(os.Environ(), "GOMAXPROCS=1"),
		Files: []uintptr{null.Fd(), null.Fd(), stderr.Fd(), r.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	return &guard{pid: pid, w: w}, nil
}

// stop ends the guard of a run that closed its group itself.
func (g *guard) stop() {
	unix.Kill(g.pid, unix.SIGKILL) // a child not yet waited for: the PID is still its
	for {
		if _, err := unix.Wait4(g.pid, nil, 0, nil); err != unix.EINTR {
			break
		}
	}
	g.w.Close()
}

// RunGuard is the guard's main: args are the session value, contain's PID,
// the grace period, whether to be verbose, and COMMAND's process group and
// its start time. It returns the exit status.
func RunGuard(args []string) int {
	if len(args) != 6 {
		fmt.Fprintln(os.Stderr, "contain: the guard is started by contain run, not by hand")
		return 2
	}
	value := args[0]
	pid, err1 := strconv.Atoi(args[1])
	grace, err2 := time.ParseDuration(args[2])
	verbose, err3 := strconv.ParseBool(args[3])
	pgrp, err4 := strconv.Atoi(args[4])
	since, err5 := strconv.ParseUint(args[5], 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		fmt.Fprintf(os.Stderr, "contain: guard: %v\n", err)
		return 2
	}
	var st unix.Stat_t
	if unix.Fstat(3, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		fmt.Fprintln(os.Stderr, "contain: the guard is started by contain run, not by hand")
		return 2
	}
	log := nopLog
	if verbose {
		log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "contain: guard: "+format+"\n", a...) }
	}
	// Nothing is ever written: the read returns when contain's end closes,
	// that is when contain has exited, however it exited.
	io.Copy(io.Discard, os.NewFile(3, "contain"))
	log("contain %d has ended without closing its group: reaping session %s", pid, value)
	guardReap(value, pid, pgrp, since, min(grace, guardGrace), log)
	return 0
}

// guardReap does what reap does, for one session: its tagged processes,
// daemons included (kill-on-close spares none), its cgroup, and COMMAND's
// process group (where processes that dropped the tag may be).
func guardReap(value string, pid, pgrp int, since uint64, grace time.Duration, log Logger) {
	me := Me()
	opts := session.Options{Filter: session.Filter{Values: []string{value}}, IncludeDaemons: true}
	scan := func() ([]session.Choice, error) { return Choose(opts, me) }
	targets, err := scan() // Reap leaves the ones to skip alone
	if err != nil {
		log("%v", err)
	}
	var cgroups []LeftoverCgroup
	if dir, err := runCgroupDir(pid); err == nil {
		if _, err := os.Stat(dir); err == nil {
			cgroups = append(cgroups, LeftoverCgroup{Dir: dir})
		}
	}
	r := Reap(ReapPlan{Targets: targets, Rescan: scan, Cgroups: cgroups, ProcessGroup: pgrp, ProcessGroupSince: since,
		Signal: unix.SIGTERM, Grace: grace, Log: log})
	for _, o := range r.Processes {
		log("%d (%s): %s", o.PID, o.Comm, o.Result)
	}
	for _, c := range r.Cgroups {
		log("cgroup %s: %s", c.Dir, c.Result)
	}
}
