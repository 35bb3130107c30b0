package guard

import (
	"os"
	"strconv"
	"syscall"

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

// startCoded starts the guard waiting in the built-in waiter: fd 3 the
// pipe, 4 the orders, 5 contain's binary, 6 the waiter itself (which
// closes it).
func startCoded() (*Guard, error) {
	sigs := signals.Fatal()
	nums := make([]byte, len(sigs))
	for i, s := range sigs {
		nums[i] = byte(s.(syscall.Signal))
	}
	prog, err := builtin.Load("contain-guard", builtin.Waiter, append(nums, 0))
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	f, err := openWaiterFiles()
	if err != nil {
		return nil, err
	}
	defer f.closeChilds()
	pid, err := syscall.ForkExec("/proc/self/fd/6", []string{"contain-guard", Arg, strconv.Itoa(os.Getpid()), ordersArg}, &syscall.ProcAttr{
		Env:   append(os.Environ(), "GOMAXPROCS=1"),
		Files: []uintptr{f.null.Fd(), f.null.Fd(), os.Stderr.Fd(), f.r.Fd(), f.orders.Fd(), f.self.Fd(), prog.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		f.closeContains()
		return nil, err
	}
	return &Guard{pid: pid, w: f.orders, hold: f.w, waiter: "the built-in waiter"}, nil
}

// waiterFiles are what a built-in waiter gets: the orders (a memfd),
// contain's binary, the pipe whose end says contain is gone, /dev/null.
// contain keeps the orders and the pipe's write end; the rest is the
// child's alone once it has them.
type waiterFiles struct{ orders, self, r, w, null *os.File }

func openWaiterFiles() (*waiterFiles, error) {
	f := &waiterFiles{}
	var err error
	if f.orders, err = builtin.Memfd("contain-guard-orders"); err != nil {
		return nil, err
	}
	if f.self, err = os.Open("/proc/self/exe"); err != nil {
		f.orders.Close()
		return nil, err
	}
	if f.r, f.w, err = os.Pipe(); err != nil {
		f.orders.Close()
		f.self.Close()
		return nil, err
	}
	if f.null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		f.orders.Close()
		f.self.Close()
		f.r.Close()
		f.w.Close()
		return nil, err
	}
	return f, nil
}

// closeChilds closes what only the child keeps.
func (f *waiterFiles) closeChilds() {
	f.self.Close()
	f.r.Close()
	f.null.Close()
}

// closeContains closes what contain would have kept, for a child that
// did not start.
func (f *waiterFiles) closeContains() {
	f.orders.Close()
	f.w.Close()
}
