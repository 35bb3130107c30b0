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
