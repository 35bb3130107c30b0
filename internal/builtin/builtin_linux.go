package builtin

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Available reports whether this build has the programs for this
// machine.
func Available() bool { return Waiter != nil }

// ErrUnavailable: there is no code for this machine.
var ErrUnavailable = errors.New("no built-in program for this machine")

// Linux's memfd_create flags that x/sys may lack: MFD_EXEC (6.3) asks for
// an executable memfd where vm.memfd_noexec=1 would otherwise seal it,
// MFD_NOEXEC_SEAL for one never executed; older kernels refuse both.
const (
	mfdNoexecSeal = 0x8
	mfdExec       = 0x10
)

// Memfd makes a memfd for data (never executed), close-on-exec.
func Memfd(name string) (*os.File, error) { return memfd(name, mfdNoexecSeal) }

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

// Load writes code, followed by data (what the code reads after itself:
// the waiter's signal numbers, the keeper's first descriptor), as a static
// executable to a memfd named name, and returns it open read-only (a file
// open for writing cannot be executed: ETXTBSY) and close-on-exec. The
// caller hands it to the child as a descriptor and executes
// /proc/self/fd/N.
func Load(name string, code, data []byte) (*os.File, error) {
	fd, err := LoadFd(name, code, data)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// LoadFd is Load's descriptor, without an *os.File around it.
func LoadFd(name string, code, data []byte) (int, error) {
	if code == nil {
		return -1, ErrUnavailable
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|mfdExec)
	if err == unix.EINVAL {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	}
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	img := Image(code, data)
	if n, err := unix.Write(fd, img); err != nil || n != len(img) {
		if err == nil {
			err = unix.EIO
		}
		return -1, err
	}
	return unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// Base is where Image loads code.
const Base = 0x400000

// Image is code as a static executable: one segment at Base, readable
// and executable, its entry the code's first byte; a stack that is not
// executable; data right after the code.
func Image(code, data []byte) []byte {
	const (
		ehsize = 64
		phsize = 56
	)
	hdr := ehsize + 2*phsize
	b := make([]byte, hdr, hdr+len(code)+len(data))
	b = append(append(b, code...), data...)
	le := binary.LittleEndian
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], machine)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], Base+uint64(hdr)) // entry
	le.PutUint64(b[32:], ehsize)           // program headers
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 2)
	load := b[ehsize:]
	le.PutUint32(load[0:], 1) // PT_LOAD
	le.PutUint32(load[4:], 5) // R+X
	le.PutUint64(load[16:], Base)
	le.PutUint64(load[24:], Base)
	le.PutUint64(load[32:], uint64(len(b)))
	le.PutUint64(load[40:], uint64(len(b)))
	le.PutUint64(load[48:], 0x1000)
	stack := b[ehsize+phsize:]
	le.PutUint32(stack[0:], 0x6474e551) // PT_GNU_STACK
	le.PutUint32(stack[4:], 6)          // R+W
	le.PutUint64(stack[48:], 16)
	return b
}
