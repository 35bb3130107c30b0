//go:build linux || darwin

package run

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeStart is the OS's part of COMMAND's start, faked: each fork returns
// the next of results, and startRefused takes refusals (a cgroup the
// kernel will not start in) while it has some left.
type fakeStart struct {
	osHooks // the rest: never called here
	shim    bool
	results []forkResult
	refuse  int
	forks   [][]string // path and argv of each try
	attrs   []syscall.SysProcAttr
	onFork  func() // what the child does before its exec (nil: nothing)
}

type forkResult struct {
	pid     int
	err     error
	execErr bool
}

func (f *fakeStart) startUnder(string, bool) (bool, error) { return f.shim, nil }

// startAttr marks what the OS adds (Pdeathsig, the cgroup: Noctty here,
// which every Unix has).
func (f *fakeStart) startAttr(attr *syscall.SysProcAttr) { attr.Noctty = true }
func (f *fakeStart) forkCommand(path string, argv []string, attr *syscall.SysProcAttr) (int, error, bool) {
	f.forks = append(f.forks, append([]string{path}, argv...))
	f.attrs = append(f.attrs, *attr)
	if f.onFork != nil {
		f.onFork()
	}
	r := f.results[0]
	f.results = f.results[1:]
	return r.pid, r.err, r.execErr
}
func (f *fakeStart) startRefused(error) bool {
	f.refuse--
	return f.refuse >= 0
}

// startRunner is a runner over f, COMMAND ./script a, its terminal fg's
// foreground (nil: none) with contain's group 10.
func startRunner(f *fakeStart, tty *fakeTTY) *runner {
	r := &runner{o: Options{Args: []string{"./script", "a"}}, path: "./script", log: nopLog, sys: f}
	r.jc = &jobControl{own: 10, log: nopLog}
	if tty != nil {
		r.jc.tty = tty
	}
	return r
}

// TestStartCommand: COMMAND's start on a fake OS: in its own process
// group with what the OS adds; a script without #! run by the shell as
// execvp does; a start the kernel refused in the run's cgroup tried again
// without it; an exec error given as COMMAND's (126, 127), not retried;
// the terminal given to COMMAND's group when contain has it, and taken
// back when the start fails; the shim's start taking the place of all.
func TestStartCommand(t *testing.T) {
	if !haveShell() {
		t.Skip("no /bin/sh: the script case needs one")
	}
	f := &fakeStart{results: []forkResult{{pid: 50}}}
	r := startRunner(f, nil)
	if err := r.startCommand(); err != nil || r.pid != 50 {
		t.Fatalf("a start: pid %d, %v", r.pid, err)
	}
	if a := f.attrs[0]; !a.Setpgid || !a.Noctty || a.Foreground {
		t.Errorf("a start without a terminal: attr %+v; want its own process group and what the OS adds", a)
	}

	f = &fakeStart{results: []forkResult{{err: unix.ENOEXEC, execErr: true}, {pid: 51}}}
	r = startRunner(f, nil)
	if err := r.startCommand(); err != nil || r.pid != 51 || !slices.Equal(f.forks[1], []string{binSh, binSh, "./script", "a"}) {
		t.Errorf("a script without #!: pid %d, %v, tries %q; want the shell to run it", r.pid, err, f.forks)
	}

	f = &fakeStart{results: []forkResult{{err: unix.EBUSY}, {pid: 52}}, refuse: 1}
	r = startRunner(f, nil)
	if err := r.startCommand(); err != nil || r.pid != 52 || len(f.forks) != 2 {
		t.Errorf("a start refused in the cgroup: pid %d, %v, %d tries; want a second try", r.pid, err, len(f.forks))
	}

	f = &fakeStart{results: []forkResult{{err: unix.ENOENT, execErr: true}}, refuse: 5}
	r = startRunner(f, nil)
	var se *StartError
	if err := r.startCommand(); !errors.As(err, &se) || !errors.Is(err, unix.ENOENT) || len(f.forks) != 1 || startStatus(err) != 127 {
		t.Errorf("an exec that failed: %v after %d tries; want COMMAND's StartError (127), once", err, len(f.forks))
	}

	tty := &fakeTTY{fg: 10}
	f = &fakeStart{results: []forkResult{{pid: 53}}}
	r = startRunner(f, tty)
	if err := r.startCommand(); err != nil || !f.attrs[0].Foreground || f.attrs[0].Ctty != 99 || !r.jc.holds {
		t.Errorf("with the terminal: %v, attr %+v, given %v; want COMMAND started in the foreground", err, f.attrs[0], r.jc.holds)
	}
	tty = &fakeTTY{fg: 10}
	// The child takes the terminal before its exec fails.
	f = &fakeStart{results: []forkResult{{err: unix.EACCES, execErr: true}}, onFork: func() { tty.fg = 77 }}
	r = startRunner(f, tty)
	if err := r.startCommand(); err == nil || tty.fg != 10 || r.jc.holds {
		t.Errorf("a failed start in the foreground: %v, foreground %d, given %v; want the terminal back with contain", err, tty.fg, r.jc.holds)
	}

	f = &fakeStart{shim: true}
	r = startRunner(f, nil)
	if err := r.startCommand(); err != nil || len(f.forks) != 0 {
		t.Errorf("under the shim: %v, %d forks; want the shim's start alone", err, len(f.forks))
	}
	r = startRunner(&fakeStart{}, nil)
	r.pathErr = unix.ENOENT
	if err := r.startCommand(); !errors.As(err, &se) {
		t.Errorf("COMMAND not found in PATH: %v; want its StartError, nothing forked", err)
	}
}
