package proc

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procInfo makes the proc_info(2) system call behind libproc's
// proc_pidinfo (callnum PROC_INFO_CALL_PIDINFO) and proc_pidfdinfo
// (PROC_INFO_CALL_PIDFDINFO, arg the descriptor), with their arguments in
// their order (libproc.c; bsd/kern/syscalls.master, 336: callnum, pid,
// flavor, uint64 arg, buffer, buffersize), and returns what the kernel
// returned: the length it wrote, or with no buffer the size to give
// (PROC_PIDLISTFDS). x/sys wraps neither; unix.Syscall6 is package
// syscall's, a direct trap on macOS, as in UsageOf: CONTRIBUTING.md says
// why not cgo or a libSystem loader.
func procInfo(callnum, pid, flavor int, arg uint64, buf []byte) (int, error) {
	var p *byte
	if len(buf) > 0 {
		p = &buf[0]
	}
	n, _, errno := unix.Syscall6(unix.SYS_PROC_INFO, uintptr(callnum), uintptr(pid), uintptr(flavor),
		uintptr(arg), uintptr(unsafe.Pointer(p)), uintptr(len(buf)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// UniqueIDs reads pid's unique ID, its parent's at fork, its pidversion
// and (macOS 15.4 and later) its original parent's pidversion. The kernel
// answers for any process of any user (proc_info.c: no same-user check
// for this flavor), zombies included (arg 1), and says ESRCH for a PID no
// process has.
//
// For a kill(2) safe from PID reuse, IDVersion read right before (and
// again after) the kill and compared with the one seen says whether the
// PID still names the program image that was seen; it changes at exec,
// while UniqueID, never handed out again, names the process across execs.
func UniqueIDs(pid int) (MacIDs, error) {
	var buf [macUniqIdentifierInfoSize]byte
	n, err := procInfo(macProcInfoCallPIDInfo, pid, macPIDUniqIdentifierInfo, 1, buf[:])
	if err != nil {
		return MacIDs{}, fmt.Errorf("proc_pidinfo(%d, PROC_PIDUNIQIDENTIFIERINFO): %w", pid, err)
	}
	return ParseMacIDs(buf[:min(n, len(buf))])
}

// FDs lists pid's open descriptors and their types. The kernel answers
// for contain's own user's processes only (root: every process): EPERM
// for another's, ESRCH for a PID no live process has (a zombie has no
// descriptors left).
func FDs(pid int) ([]MacFD, error) {
	fds, err := listFDs(
		func() (int, error) { return procInfo(macProcInfoCallPIDInfo, pid, macPIDListFDs, 0, nil) },
		func(b []byte) (int, error) { return procInfo(macProcInfoCallPIDInfo, pid, macPIDListFDs, 0, b) })
	if err != nil {
		return nil, fmt.Errorf("proc_pidinfo(%d, PROC_PIDLISTFDS): %w", pid, err)
	}
	return fds, nil
}

// PipeHandles reads the handles of the pipe end that pid's descriptor fd
// holds, and of its other end (ParseMacPipe). The kernel answers for
// contain's own user's processes only (root: every process); EBADF when
// fd is closed or is no pipe.
func PipeHandles(pid, fd int) (handle, peer uint64, err error) {
	var buf [macPipeFDInfoSize]byte
	n, err := procInfo(macProcInfoCallPIDFDInfo, pid, macPIDFDPipeInfo, uint64(fd), buf[:])
	if err != nil {
		return 0, 0, fmt.Errorf("proc_pidfdinfo(%d, %d, PROC_PIDFDPIPEINFO): %w", pid, fd, err)
	}
	return ParseMacPipe(buf[:min(n, len(buf))])
}

// Pipes lists pid's pipe descriptors with their handles: what the marker
// rule (track.Marker) looks at. A descriptor closed between the listing
// and its read (EBADF) is left out.
func Pipes(pid int) ([]MacPipe, error) {
	fds, err := FDs(pid)
	if err != nil {
		return nil, err
	}
	var out []MacPipe
	for _, fd := range fds {
		if fd.Type != MacFDTypePipe {
			continue
		}
		h, peer, err := PipeHandles(pid, fd.FD)
		if errors.Is(err, unix.EBADF) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, MacPipe{FD: fd.FD, Handle: h, Peer: peer})
	}
	return out, nil
}

// Listeners reads what pid's sockets listen on (ParseMacSocket): the
// kernel answers for contain's own user's processes only (root: every
// process). A descriptor closed between the listing and its read is left
// out.
func Listeners(pid int) ([]MacListener, error) {
	fds, err := FDs(pid)
	if err != nil {
		return nil, err
	}
	var out []MacListener
	var buf [macSocketFDInfoSize]byte
	for _, fd := range fds {
		if fd.Type != MacFDTypeSocket {
			continue
		}
		n, err := procInfo(macProcInfoCallPIDFDInfo, pid, macPIDFDSocketInfo, uint64(fd.FD), buf[:])
		if errors.Is(err, unix.EBADF) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("proc_pidfdinfo(%d, %d, PROC_PIDFDSOCKETINFO): %w", pid, fd.FD, err)
		}
		l, err := ParseMacSocket(buf[:min(n, len(buf))])
		if err != nil {
			return nil, err
		}
		if l.Proto != "" {
			out = append(out, l)
		}
	}
	return out, nil
}
