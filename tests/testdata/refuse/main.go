//go:build linux

// Command refuse runs PROGRAM where one system call fails (EPERM, from a
// seccomp filter), as in a sandbox that forbids it: memfd_create (contain's
// built-in programs cannot be written, and contain must fall back to the
// shell and to contain __shim), or signalfd4 (the built-in keeper starts,
// and ends before it starts COMMAND).
//
//	refuse memfd_create|signalfd4 PROGRAM [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	calls := map[string]uint32{"memfd_create": unix.SYS_MEMFD_CREATE, "signalfd4": unix.SYS_SIGNALFD4}
	if len(os.Args) < 3 || calls[os.Args[1]] == 0 {
		fmt.Fprintln(os.Stderr, "usage: refuse memfd_create|signalfd4 PROGRAM [ARG...]")
		os.Exit(2)
	}
	refused := calls[os.Args[1]]
	path, err := exec.LookPath(os.Args[2])
	if err != nil {
		fail(err)
	}
	// The filter holds for this thread and what it executes.
	runtime.LockOSThread()
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		arch = 4 // offsetof(struct seccomp_data, arch)
		nr   = 0 // offsetof(struct seccomp_data, nr)
	)
	filter := []unix.SockFilter{
		{Code: ld, K: arch},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.AUDIT_ARCH_X86_64},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW}, // another machine: no filter
		{Code: ld, K: nr},
		{Code: jeq, Jt: 0, Jf: 1, K: refused},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fail(e)
	}
	fail(syscall.Exec(path, os.Args[2:], os.Environ()))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "refuse:", err)
	os.Exit(127)
}
