package proc

import (
	"sync"
	_ "unsafe" // go:linkname

	"golang.org/x/sys/unix"
)

// sysctl is x/sys's own sysctl(3), which goes through libSystem as every
// x/sys call on macOS does. x/sys exports only SysctlRaw for raw reads,
// which sizes its buffer with a first call (see readProcArgs2 for why
// kern.procargs2 needs one read into a buffer of its own). The signature
// is that of golang.org/x/sys/unix v0.49.0 (go.mod), where _C_int is
// int32; TestDarwinProcArgs2 compares its reads with SysctlRaw's on the
// workflow's macOS runners. (The empty sysctl_darwin.s lets this function
// have no body.)
//
//go:linkname sysctl golang.org/x/sys/unix.sysctl
func sysctl(mib []int32, old *byte, oldlen *uintptr, new *byte, newlen uintptr) error

// kernProcArgs2 is KERN_PROCARGS2 of <sys/sysctl.h>, which x/sys lacks.
const kernProcArgs2 = 49

// argMax is ARG_MAX, the most kern.procargs2 returns: kern.argmax (1 MiB
// on macOS), read once.
var argMax = sync.OnceValue(func() int {
	v, err := unix.SysctlUint32("kern.argmax")
	if err != nil || v < 4096 || v > 64<<20 {
		return 1 << 20
	}
	return int(v)
})

// argsBuffers are buffers for readProcArgs2: argc and ARG_MAX bytes.
var argsBuffers = sync.Pool{New: func() any {
	b := make([]byte, 4+argMax())
	return &b
}}

// procArgs2 reads kern.procargs2 of pid (readProcArgs2).
func procArgs2(pid int) ([]byte, error) {
	mib := []int32{unix.CTL_KERN, kernProcArgs2, int32(pid)}
	bp := argsBuffers.Get().(*[]byte)
	defer argsBuffers.Put(bp)
	return readProcArgs2(*bp,
		func(b []byte) (int, error) {
			n := uintptr(len(b))
			err := sysctl(mib, &b[0], &n, nil, 0)
			return int(n), err
		},
		func() (int, error) {
			n := uintptr(0)
			err := sysctl(mib, nil, &n, nil, 0)
			return int(n), err
		})
}
