package guard

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// The crash guard waits, on linux/amd64, in a program of a few system
// calls that contain writes out at start-up (waiterCode, assembled from
// testdata/waiter_amd64.S): it ignores the signals the guard ignores,
// waits on a pipe for contain's end (poll for POLLHUP alone, so nothing
// is read) and then executes contain __guard in its place. It starts in a
// tenth of the time /bin/sh takes, runs no script that could fail, and so
// needs no word that it runs: contain starts it, and COMMAND, without
// waiting for anything but the exec. contain writes its orders to a
// memfd, which the guard reads from the start once contain is gone: no
// reader drains them meanwhile, and a pipe would fill.
//
// It runs from a memfd of its own, so nothing on disk is trusted or
// needed. Where it cannot (another architecture, no memfd, a kernel that
// refuses to execute one: vm.memfd_noexec=2, a security module) the guard
// waits in /bin/sh (waiterScript), as on macOS, or in contain __guard
// itself. CONTAIN_DISABLE=waiter skips it.

// errNoWaiter: this build has no waiter program for this architecture.
var errNoWaiter = errors.New("no built-in waiter for this architecture")

// Linux's memfd_create flags that x/sys may lack: MFD_EXEC (6.3) asks for
// an executable memfd where vm.memfd_noexec=1 would otherwise seal it,
// MFD_NOEXEC_SEAL for one never executed; older kernels refuse both.
const (
	mfdNoexecSeal = 0x8
	mfdExec       = 0x10
)

// memfd makes a memfd, with extra flags where the kernel knows them.
func memfd(name string, extra int) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|extra)
	if err == unix.EINVAL {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// waiterELF is waiterCode as a static executable: one segment, loaded at
// 4 MiB, readable and executable; a stack that is not; then the numbers
// of the signals to ignore, a byte each, and a 0.
func waiterELF(sigs []byte) []byte {
	const (
		ehsize = 64
		phsize = 56
		base   = 0x400000
	)
	hdr := ehsize + 2*phsize
	b := make([]byte, hdr, hdr+len(waiterCode)+len(sigs)+1)
	b = append(append(append(b, waiterCode...), sigs...), 0)
	le := binary.LittleEndian
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], waiterMachine)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], base+uint64(hdr)) // entry
	le.PutUint64(b[32:], ehsize)           // program headers
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 2)
	load := b[ehsize:]
	le.PutUint32(load[0:], 1) // PT_LOAD
	le.PutUint32(load[4:], 5) // R+X
	le.PutUint64(load[16:], base)
	le.PutUint64(load[24:], base)
	le.PutUint64(load[32:], uint64(len(b)))
	le.PutUint64(load[40:], uint64(len(b)))
	le.PutUint64(load[48:], 0x1000)
	stack := b[ehsize+phsize:]
	le.PutUint32(stack[0:], 0x6474e551) // PT_GNU_STACK
	le.PutUint32(stack[4:], 6)          // R+W
	le.PutUint64(stack[48:], 16)
	return b
}

// startCoded starts the guard waiting in the built-in waiter.
func startCoded() (*Guard, error) {
	if waiterCode == nil {
		return nil, errNoWaiter
	}
	sigs := signals.Fatal()
	nums := make([]byte, len(sigs))
	for i, s := range sigs {
		nums[i] = byte(s.(syscall.Signal))
	}
	prog, err := memfd("contain-guard", mfdExec)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if _, err := prog.Write(waiterELF(nums)); err != nil {
		return nil, err
	}
	// A file open for writing cannot be executed (ETXTBSY): it is run
	// from a read-only open of it, and this one closed.
	ro, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(prog.Fd())))
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	prog.Close()
	orders, err := memfd("contain-guard-orders", mfdNoexecSeal)
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
		Files: []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), r.Fd(), orders.Fd(), self.Fd(), ro.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		orders.Close()
		w.Close()
		return nil, err
	}
	return &Guard{pid: pid, w: orders, hold: w}, nil
}
