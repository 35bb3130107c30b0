package guard

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/builtin"
	"github.com/contain-cli/contain/internal/signals"
)

// The crash guard waits, on linux/amd64, in builtin.Waiter: a program of
// a few system calls that contain writes to a memfd at start-up. It
// ignores the signals the guard ignores, waits for the pipe's end (poll
// for POLLHUP alone: nothing is read) and then executes contain __guard
// in its place. It starts in a tenth of the time /bin/sh takes, runs no
// script that could fail, and so needs no word that it runs: contain
// waits for nothing but the exec. contain writes its orders to a memfd,
// which the guard reads from the start once contain is gone: no reader
// drains them meanwhile, and a pipe would fill.
//
// Where it cannot run (another machine, a kernel that refuses to execute
// a memfd: vm.memfd_noexec=2, a security module) the guard waits in
// /bin/sh (waiterScript), as on macOS, or in contain __guard itself.
// CONTAIN_DISABLE=waiter skips it.

// waiterData is what the built-in waiter reads after its code: the
// numbers of the signals it ignores, one byte each, then a 0.
func waiterData() []byte {
	sigs := signals.Fatal()
	nums := make([]byte, len(sigs)+1)
	for i, s := range sigs {
		nums[i] = byte(s.(syscall.Signal))
	}
	return nums
}

// startSpawned starts the guard waiting in the built-in waiter, as
// startCoded does, but with builtin.Spawn: contain goes on while the
// waiter executes, and Ready waits for that before COMMAND starts. Its
// descriptors are the same.
func startSpawned() (*Guard, error) {
	p, err := prepareSpawned()
	if err != nil {
		return nil, err
	}
	return p.start()
}

// spawnFault, set by a test, has the spawned waiter fail to execute.
var spawnFault bool

// spawnedGuard is startSpawned's guard made ready, to start (start) from
// another thread than the one that made it ready.
type spawnedGuard struct {
	sp           *builtin.Spawner
	orders, hold *os.File
	fds          []int // the child's sources, closed once it has its own
}

// prepareSpawned readies startSpawned's guard.
func prepareSpawned() (*spawnedGuard, error) {
	p := &spawnedGuard{}
	prog, err := builtin.LoadFd("contain-guard", builtin.Waiter, waiterData())
	if err != nil {
		return nil, err
	}
	if spawnFault {
		// A memfd sealed against execution: the kernel refuses it (EACCES).
		unix.Close(prog)
		f, err := builtin.Memfd("contain-guard-fault")
		if err != nil {
			return nil, err
		}
		prog, err = unix.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	p.fds = append(p.fds, prog)
	if p.orders, err = builtin.Memfd("contain-guard-orders"); err != nil {
		return nil, p.drop(err)
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		return nil, p.drop(err)
	}
	p.fds = append(p.fds, pipe[0])
	p.hold = os.NewFile(uintptr(pipe[1]), "contain-guard-pipe")
	self, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, p.drop(err)
	}
	p.fds = append(p.fds, self)
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, p.drop(err)
	}
	p.fds = append(p.fds, null)
	stderr := 2
	if _, err := unix.FcntlInt(2, unix.F_GETFD, 0); err != nil {
		stderr = null // none: /dev/null, as for 0 and 1
	}
	p.sp, err = builtin.NewSpawner(builtin.Spec{
		Argv: []string{"contain-guard", Arg, strconv.Itoa(os.Getpid()), ordersArg},
		Env:  append(os.Environ(), "GOMAXPROCS=1"),
		Moves: []builtin.Move{{Src: null, Dst: 0}, {Src: null, Dst: 1}, {Src: stderr, Dst: 2},
			{Src: pipe[0], Dst: 3}, {Src: int(p.orders.Fd()), Dst: 4}, {Src: self, Dst: 5}, {Src: prog, Dst: 6}},
		Prog:   6,
		Setsid: true,
	})
	if err != nil {
		return nil, p.drop(err)
	}
	return p, nil
}

// start starts the guard that prepareSpawned readied; a child of the
// calling thread.
func (p *spawnedGuard) start() (*Guard, error) {
	c, err := p.sp.Start()
	if err != nil {
		return nil, p.drop(err)
	}
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	return &Guard{pid: c.Pid, w: p.orders, hold: p.hold, waiter: "the built-in waiter", starting: c}, nil
}

// drop closes what p holds, and returns err.
func (p *spawnedGuard) drop(err error) error {
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	for _, f := range []*os.File{p.orders, p.hold} {
		if f != nil {
			f.Close()
		}
	}
	if p.sp != nil {
		p.sp.Drop()
	}
	return err
}

// startCoded starts the guard waiting in the built-in waiter: fd 3 the
// pipe, 4 the orders, 5 contain's binary, 6 the waiter itself (which
// closes it).
func startCoded() (*Guard, error) {
	prog, err := builtin.Load("contain-guard", builtin.Waiter, waiterData())
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	orders, err := builtin.Memfd("contain-guard-orders")
	if err != nil {
		return nil, err
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		orders.Close()
		return nil, err
	}
	defer self.Close()
	r, w, err := os.Pipe()
	if err != nil {
		orders.Close()
		return nil, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		orders.Close()
		w.Close()
		return nil, err
	}
	defer null.Close()
	pid, err := syscall.ForkExec("/proc/self/fd/6", []string{"contain-guard", Arg, strconv.Itoa(os.Getpid()), ordersArg}, &syscall.ProcAttr{
		Env:   append(os.Environ(), "GOMAXPROCS=1"),
		Files: []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), r.Fd(), orders.Fd(), self.Fd(), prog.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		orders.Close()
		w.Close()
		return nil, err
	}
	return &Guard{pid: pid, w: orders, hold: w, waiter: "the built-in waiter"}, nil
}
