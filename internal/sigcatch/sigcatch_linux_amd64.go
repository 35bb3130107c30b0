package sigcatch

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The handler and its restorer (sigcatch_linux_amd64.s). handler is called
// by the kernel as a C handler, on the thread's signal stack (SA_ONSTACK:
// every thread of a Go program has one), and writes the signal's number to
// writeFD; restorer is the rt_sigreturn that SA_RESTORER requires.
func handler()
func restorer()

// handlerPC and restorerPC are the code addresses of the two (their ABI0
// entries, not the wrappers a Go func value of them would point to).
func handlerPC() uintptr
func restorerPC() uintptr

// writeFD is the pipe the handler writes to; set before any handler is
// installed, never changed after.
var writeFD int64 = -1

// sigactiont is the kernel's struct sigaction on amd64.
type sigactiont struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saSiginfo  = 0x4
	saOnstack  = 0x08000000
	saRestorer = 0x04000000
	saRestart  = 0x10000000
)

// reserved are the signals the Go runtime needs for itself.
func reserved(s syscall.Signal) bool {
	switch s {
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGURG, unix.SIGPROF,
		unix.SIGKILL, unix.SIGSTOP:
		return true
	}
	return s <= 0 || s >= 32 && s <= 34 || s > 64
}

// Catch makes each of sigs send itself on c from now on, until the process
// exits. Called once per process.
func Catch(sigs []syscall.Signal, c chan<- os.Signal) error {
	for _, s := range sigs {
		if reserved(s) {
			return fmt.Errorf("sigcatch: %v is the Go runtime's", s)
		}
	}
	if writeFD >= 0 {
		return fmt.Errorf("sigcatch: already catching")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("sigcatch: %w", err)
	}
	// The read end is non-blocking too, so that os.File reads it through
	// the runtime's poller, without a thread of its own.
	r := os.NewFile(uintptr(p[0]), "signals")
	writeFD = int64(p[1])
	// The reader first: should an rt_sigaction fail midway, the signals
	// caught before it still reach c. (os/signal, which the caller then
	// falls back to, would not take them back: the runtime believes its
	// own handler is there.)
	go deliver(r, c, func(b byte) os.Signal { return syscall.Signal(b) })
	sa := sigactiont{handler: handlerPC(), flags: saSiginfo | saOnstack | saRestorer | saRestart,
		restorer: restorerPC(), mask: ^uint64(0)}
	for _, s := range sigs {
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("sigcatch: %v: %w", s, e)
		}
	}
	return nil
}
