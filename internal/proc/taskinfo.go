package proc

// A macOS process's usage as proc_pidinfo(PROC_PIDTASKINFO) gives it: the
// decoding of the kernel's struct proc_taskinfo and of its time unit, over
// plain values, so that it is tested on every OS (taskinfo_test.go);
// usage_darwin.go makes the call.

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/contain-cli/contain/session"
)

// The proc_info(2) call of XNU's <sys/proc_info.h> that libproc's
// proc_pidinfo makes (x/sys has the system call's number only).
const (
	macProcInfoCallPIDInfo = 2 // PROC_INFO_CALL_PIDINFO
	macPIDTaskInfo         = 4 // PROC_PIDTASKINFO: struct proc_taskinfo
	// macTaskInfoSize is sizeof(struct proc_taskinfo): six uint64
	// (pti_virtual_size, pti_resident_size, pti_total_user,
	// pti_total_system, pti_threads_user, pti_threads_system) then twelve
	// int32 counters. The kernel copies out no less.
	macTaskInfoSize = 6*8 + 12*4
)

// MacTimebase is mach_timebase_info: a Mach absolute time unit is
// Numer/Denom nanoseconds.
type MacTimebase struct{ Numer, Denom uint64 }

// MacTimebaseOf says what a Mach absolute time unit is. tbFrequency is the
// kernel's timebase frequency (sysctl hw.tbfrequency, in Hz; 0 when it
// cannot be read): the unit is one period of it. Without it, the unit is
// known by the machine: 1 ns on Intel (amd64), whose kernel keeps absolute
// time in nanoseconds, and 125/3 ns (a 24 MHz timer) on Apple silicon
// (arm64), also for an Intel binary that Rosetta runs there (translated):
// proc_taskinfo comes from the kernel in the machine's unit, whatever the
// unit Rosetta shows the program's own mach_absolute_time in.
func MacTimebaseOf(tbFrequency uint64, goarch string, translated bool) MacTimebase {
	if tbFrequency >= 1e6 && tbFrequency <= 1e10 {
		n, d := uint64(1e9), tbFrequency
		g := gcd(n, d)
		return MacTimebase{n / g, d / g}
	}
	if goarch == "arm64" || translated {
		return MacTimebase{125, 3}
	}
	return MacTimebase{1, 1}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Duration turns n Mach absolute time units into a duration: n*Numer in
// 128 bits, so that it cannot overflow; past time.Duration, its most.
func (tb MacTimebase) Duration(n uint64) time.Duration {
	if tb.Denom == 0 {
		return 0
	}
	hi, lo := bits.Mul64(n, tb.Numer)
	if hi >= tb.Denom {
		return 1<<63 - 1
	}
	ns, _ := bits.Div64(hi, lo, tb.Denom)
	if ns > 1<<63-1 {
		return 1<<63 - 1
	}
	return time.Duration(ns)
}

// MacTaskUsage decodes the struct proc_taskinfo that proc_pidinfo copied
// out (b, in the machine's byte order, which is little-endian on both of
// macOS's architectures): the resident size in bytes, and the CPU time of
// all the task's threads, the ended ones included (pti_total_user and
// pti_total_system, in Mach absolute time units).
func MacTaskUsage(b []byte, tb MacTimebase) (session.Usage, error) {
	if len(b) < macTaskInfoSize {
		return session.Usage{}, fmt.Errorf("proc_pidinfo(PROC_PIDTASKINFO): %d bytes, not %d", len(b), macTaskInfoSize)
	}
	le := binary.LittleEndian
	rss := le.Uint64(b[8:])
	user, sys := le.Uint64(b[16:]), le.Uint64(b[24:])
	return session.Usage{CPU: tb.Duration(user) + tb.Duration(sys), RSS: rss, Known: true}, nil
}
