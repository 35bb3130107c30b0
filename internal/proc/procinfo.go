package proc

// What proc_info(2) says of a macOS process's lineage and descriptors: the
// decoding of the kernel's structures over bytes, so that it is tested on
// every OS (procinfo_test.go, with fixtures built from the layouts below);
// procinfo_darwin.go makes the calls.
//
// Read in xnu-11417.101.15 (macOS 15.4/15.5): bsd/sys/proc_info.h (struct
// proc_fdinfo, proc_fileinfo, vinfo_stat, pipe_info, pipe_fdinfo, the
// PROX_FDTYPE_* and flavor numbers), bsd/sys/proc_info_private.h (struct
// proc_uniqidentifierinfo, PROC_PIDUNIQIDENTIFIERINFO and the
// PROC_INFO_CALL_* numbers), bsd/kern/proc_info.c (what each flavor
// copies out, and whom it answers), bsd/kern/kern_fork.c and kern_exec.c
// (when each identifier is set), bsd/kern/sys_pipe.c (fill_pipeinfo),
// and libsyscall/wrappers/libproc/libproc.c (proc_pidinfo and
// proc_pidfdinfo are __proc_info(callnum, pid, flavor, arg, buffer, size)).
// Both of macOS's architectures are little-endian and LP64, where these
// structures have no padding but the alignment of their uint64 fields.

import (
	"encoding/binary"
	"fmt"
)

// The proc_info(2) calls and flavors contain makes (x/sys has only the
// system call's number, SYS_PROC_INFO = 336).
const (
	macProcInfoCallPIDFDInfo = 3  // PROC_INFO_CALL_PIDFDINFO: proc_pidfdinfo
	macPIDListFDs            = 1  // PROC_PIDLISTFDS: struct proc_fdinfo[]
	macPIDUniqIdentifierInfo = 17 // PROC_PIDUNIQIDENTIFIERINFO: struct proc_uniqidentifierinfo
	macPIDFDPipeInfo         = 6  // PROC_PIDFDPIPEINFO: struct pipe_fdinfo

	// macUniqIdentifierInfoSize is sizeof(struct proc_uniqidentifierinfo),
	// which XNU asserts ("This structure is API"): p_uuid[16],
	// p_uniqueid @16, p_puniqueid @24, p_idversion @32,
	// p_orig_ppidversion @36 (p_reserve2 before 15.4, always 0), two
	// reserved uint64.
	macUniqIdentifierInfoSize = 56
	// macFDInfoSize is sizeof(struct proc_fdinfo): int32 proc_fd,
	// uint32 proc_fdtype.
	macFDInfoSize = 8
	// macPipeFDInfoSize is sizeof(struct pipe_fdinfo): struct
	// proc_fileinfo (24 bytes), then struct pipe_info: struct vinfo_stat
	// (136 bytes), pipe_handle @160, pipe_peerhandle @168, pipe_status,
	// rfu_1. The kernel refuses a smaller buffer (ENOMEM).
	macPipeFDInfoSize = 184

	// MacFDTypePipe is PROX_FDTYPE_PIPE, a proc_fdtype.
	MacFDTypePipe = 6
)

// MacIDs is what PROC_PIDUNIQIDENTIFIERINFO says of a process.
//
// UniqueID is handed out at fork from one counter (kern_fork.c,
// ++nextuniqueid), kept across exec and never reused: a parent's is
// always smaller than its children's. ParentUniqueID is the parent's at
// fork, and is not changed when the process is re-parented to launchd;
// but since macOS 13 an exec sets it to the parent's of that moment
// (kern_proc.c, pinsertchild), which for an orphan is launchd's.
// IDVersion (p_idversion) comes from another counter, taken again at
// every fork and every exec (kern_exec.c, exec_handle_sugid): it names
// one program image of one process, and changes when the process execs.
// OrigParentIDVersion, since macOS 15.4, is the parent's IDVersion at
// fork, kept across exec and re-parenting; 0 before 15.4.
type MacIDs struct {
	UniqueID            uint64
	ParentUniqueID      uint64
	IDVersion           int32
	OrigParentIDVersion int32
}

// ParseMacIDs decodes the struct proc_uniqidentifierinfo that
// proc_pidinfo copied out.
func ParseMacIDs(b []byte) (MacIDs, error) {
	if len(b) < macUniqIdentifierInfoSize {
		return MacIDs{}, fmt.Errorf("proc_pidinfo(PROC_PIDUNIQIDENTIFIERINFO): %d bytes, not %d", len(b), macUniqIdentifierInfoSize)
	}
	le := binary.LittleEndian
	return MacIDs{
		UniqueID:            le.Uint64(b[16:]),
		ParentUniqueID:      le.Uint64(b[24:]),
		IDVersion:           int32(le.Uint32(b[32:])),
		OrigParentIDVersion: int32(le.Uint32(b[36:])),
	}, nil
}

// MacFD is one open descriptor of a process, as PROC_PIDLISTFDS lists it.
type MacFD struct {
	FD   int
	Type uint32 // a PROX_FDTYPE_*
}

// ParseMacFDs decodes the array of struct proc_fdinfo that proc_pidinfo
// copied out (its return value is the length it wrote).
func ParseMacFDs(b []byte) ([]MacFD, error) {
	if len(b)%macFDInfoSize != 0 {
		return nil, fmt.Errorf("proc_pidinfo(PROC_PIDLISTFDS): %d bytes, not a multiple of %d", len(b), macFDInfoSize)
	}
	le := binary.LittleEndian
	out := make([]MacFD, 0, len(b)/macFDInfoSize)
	for i := 0; i < len(b); i += macFDInfoSize {
		out = append(out, MacFD{FD: int(int32(le.Uint32(b[i:]))), Type: le.Uint32(b[i+4:])})
	}
	return out, nil
}

// ParseMacPipe decodes the struct pipe_fdinfo that proc_pidfdinfo copied
// out: the handles of the pipe's end that the descriptor holds and of the
// other end. A handle is the kernel's keyed hash of the end's address
// (VM_KERNEL_ADDRHASH), the same in every process; the other end's is 0
// once that end is closed everywhere (the hash of NULL).
func ParseMacPipe(b []byte) (handle, peer uint64, err error) {
	if len(b) < macPipeFDInfoSize {
		return 0, 0, fmt.Errorf("proc_pidfdinfo(PROC_PIDFDPIPEINFO): %d bytes, not %d", len(b), macPipeFDInfoSize)
	}
	le := binary.LittleEndian
	return le.Uint64(b[160:]), le.Uint64(b[168:]), nil
}

// MacPipe is one pipe descriptor of a process and the handles of the end
// it holds and of the other end (ParseMacPipe).
type MacPipe struct {
	FD           int
	Handle, Peer uint64
}

// macFDListMax bounds the descriptor table listFDs reads: 2^20 entries
// (8 MiB), beyond kern.maxfilesperproc's default.
const macFDListMax = 1 << 20

// listFDs reads a process's descriptor table with PROC_PIDLISTFDS: size
// is the call without a buffer, whose answer is the table's length plus
// room for 20 more; read fills a buffer and returns the length it wrote,
// which is never more than the buffer. A buffer filled to its end may
// have left descriptors out (the process opened more meanwhile): it is
// read again, twice as large, up to macFDListMax entries; a table still
// larger is an error, never a list with descriptors left out.
func listFDs(size func() (int, error), read func([]byte) (int, error)) ([]MacFD, error) {
	n, err := size()
	if err != nil {
		return nil, err
	}
	n = max(n-n%macFDInfoSize, 16*macFDInfoSize)
	for {
		buf := make([]byte, n)
		got, err := read(buf)
		if err != nil {
			return nil, err
		}
		if got < 0 || got > n {
			return nil, fmt.Errorf("proc_pidinfo(PROC_PIDLISTFDS): %d bytes written into %d", got, n)
		}
		if got < n {
			return ParseMacFDs(buf[:got])
		}
		if n >= macFDListMax*macFDInfoSize {
			return nil, fmt.Errorf("proc_pidinfo(PROC_PIDLISTFDS): more than %d descriptors", macFDListMax)
		}
		n = min(2*n, macFDListMax*macFDInfoSize)
	}
}
