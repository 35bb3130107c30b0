// Package limit is contain run's whole-tree limits: what was asked
// (--memory, --pids, --cpu-time, --cpus), their parsing, how each is
// enforced (by the kernel, or by contain sampling the tree), what was
// observed, and the report's account of it. The Enforcer carries them out
// over a Tree, the verbs each OS supplies (sample, pause, halt, kill, the
// kernel's outcome); the decisions are here, on plain numbers and with no
// system call, so that every OS decides alike and the logic is tested on
// any.
package limit

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/contain-cli/contain/report"
)

// Kind is one of the limits.
type Kind int

const (
	Memory  Kind = iota // --memory: resident memory of the whole tree
	Pids                // --pids: processes alive at once
	CPUTime             // --cpu-time: CPU time of the whole tree
	CPUs                // --cpus: a CPU share
	nKinds
)

// Kinds are the limits in the order they are listed.
var Kinds = []Kind{Memory, Pids, CPUTime, CPUs}

// Option is the option of contain run that sets the limit.
func (k Kind) Option() string {
	return [...]string{"--memory", "--pids", "--cpu-time", "--cpus"}[k]
}

// Key is the limit's name in the report.
func (k Kind) Key() string { return [...]string{"memory", "pids", "cpu_time", "cpus"}[k] }

// Words name the limit in a sentence.
func (k Kind) Words() string {
	return [...]string{"memory limit", "process limit", "CPU time limit", "CPU share"}[k]
}

// Unit is the unit of the limit's numbers in the report.
func (k Kind) Unit() string { return [...]string{"bytes", "processes", "seconds", "cpus"}[k] }

// Set is what was asked; a zero field asks nothing.
type Set struct {
	Memory  uint64        // bytes
	Pids    int           // processes (the kernel counts threads too)
	CPUTime time.Duration // user + system, the whole tree
	CPUs    float64       // CPUs' worth of time per wall-clock second
	// Strict: refuse to run when a limit asked for cannot be enforced by
	// the kernel (sampling is not enough).
	Strict bool
}

// Any reports whether a limit is asked for.
func (s Set) Any() bool { return s.Memory > 0 || s.Pids > 0 || s.CPUTime > 0 || s.CPUs > 0 }

// Has reports whether limit k is asked for.
func (s Set) Has(k Kind) bool {
	switch k {
	case Memory:
		return s.Memory > 0
	case Pids:
		return s.Pids > 0
	case CPUTime:
		return s.CPUTime > 0
	case CPUs:
		return s.CPUs > 0
	}
	return false
}

// Asked lists the limits asked for.
func (s Set) Asked() []Kind {
	var out []Kind
	for _, k := range Kinds {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// Value is limit k as a number in its unit.
func (s Set) Value(k Kind) float64 {
	switch k {
	case Memory:
		return float64(s.Memory)
	case Pids:
		return float64(s.Pids)
	case CPUTime:
		return s.CPUTime.Seconds()
	case CPUs:
		return s.CPUs
	}
	return 0
}

// Show says limit k as people write it: "100 MiB", "50", "2s", "1.5".
func (s Set) Show(k Kind) string {
	switch k {
	case Memory:
		return Size(s.Memory)
	case Pids:
		return strconv.Itoa(s.Pids)
	case CPUTime:
		return s.CPUTime.String()
	case CPUs:
		return strconv.FormatFloat(s.CPUs, 'f', -1, 64)
	}
	return ""
}

// The smallest limits that make sense: below them nothing useful runs, or
// the kernel's own granularity is coarser (clock ticks of 10 ms; cpu.max
// takes at least 1 ms per 100 ms period).
const (
	MinMemory  = 4 << 20
	MinCPUTime = 10 * time.Millisecond
	MinCPUs    = 0.01
	MaxPids    = 1 << 22 // the kernel's largest pid_max
)

// ParseSize reads a SIZE: bytes, or a number with a binary unit as Docker
// and systemd take them: K, M, G, T, with or without B or iB, any case
// (512M, 2G, 2GiB, 1.5g, 1048576).
func ParseSize(s string) (uint64, error) {
	num := strings.TrimSpace(s)
	lower := strings.ToLower(num)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := plainPositive(num)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with K, M, G or T: 512M, 2GiB)", s)
	}
	b := f * mult
	if err := checkMemory(b, strconv.Quote(s)); err != nil {
		return 0, err
	}
	return uint64(b), nil
}

// checkMemory checks a memory limit of b bytes, shown as shown.
func checkMemory(b float64, shown string) error {
	switch {
	case b >= math.MaxInt64:
		return fmt.Errorf("size %s is too large", shown)
	case b < MinMemory:
		return fmt.Errorf("size %s is too small to run anything: at least %s", shown, Size(MinMemory))
	}
	return nil
}

// ParsePids reads --pids: a whole number of processes, at least 1.
func ParsePids(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is too large: at most %d", s, MaxPids)
	case err != nil:
		return 0, fmt.Errorf("invalid number of processes %q (want a whole number, at least 1)", s)
	}
	return n, checkPids(n, strconv.Quote(s))
}

// checkPids checks a limit of n processes, shown as shown.
func checkPids(n int, shown string) error {
	switch {
	case n < 1:
		return fmt.Errorf("invalid number of processes %s: at least 1 (COMMAND itself)", shown)
	case n > MaxPids:
		return fmt.Errorf("%s is too large: at most %d", shown, MaxPids)
	}
	return nil
}

// ParseCPUs reads --cpus: a number of CPUs (1.5) or a percentage of one
// (150%), as Docker's --cpus and systemd's CPUQuota=, from MinCPUs to
// maxCPUs (the CPUs this process may run on, NumCPU): a share larger
// than the machine is refused, as Docker refuses it ("range of CPUs is
// from 0.01 to N"), rather than cut or wrapped into cpu.max.
func ParseCPUs(s string, maxCPUs int) (float64, error) {
	num, scale := strings.TrimSpace(s), 1.0
	if p, ok := strings.CutSuffix(num, "%"); ok {
		num, scale = strings.TrimSpace(p), 0.01
	}
	f, err := plainPositive(num)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid CPU share %q (want a number of CPUs such as 1.5, or a percentage such as 150%%)", s)
	}
	f *= scale
	return f, checkCPUs(f, maxCPUs, strconv.Quote(s))
}

// checkCPUs checks a share of f CPUs, shown as shown, on a machine of
// maxCPUs (0: not known).
func checkCPUs(f float64, maxCPUs int, shown string) error {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("invalid CPU share %s", shown)
	case f < MinCPUs:
		return fmt.Errorf("CPU share %s is too small: at least %v CPUs (1%%)", shown, MinCPUs)
	case maxCPUs >= 1 && f > float64(maxCPUs):
		return fmt.Errorf("CPU share %s is more than this machine has: the range of CPUs is from %v to %d", shown, MinCPUs, maxCPUs)
	}
	return nil
}

// Check checks a Set given as numbers (a library's Options, a Spec) as
// the parsers check what they read, and names the option of the first
// limit it refuses ("memory", "pids", "cpu-time", "cpus"). Zero is no
// limit.
func (l Set) Check() (option string, err error) {
	if l.Memory > 0 {
		if err := checkMemory(float64(l.Memory), strconv.FormatUint(l.Memory, 10)); err != nil {
			return "memory", err
		}
	}
	if l.Pids != 0 {
		if err := checkPids(l.Pids, strconv.Itoa(l.Pids)); err != nil {
			return "pids", err
		}
	}
	if l.CPUTime != 0 {
		if l.CPUTime < 0 {
			return "cpu-time", fmt.Errorf("%v is negative", l.CPUTime)
		}
		if err := CheckCPUTime(l.CPUTime); err != nil {
			return "cpu-time", err
		}
	}
	if l.CPUs != 0 {
		if err := checkCPUs(l.CPUs, NumCPU(), strconv.FormatFloat(l.CPUs, 'g', -1, 64)); err != nil {
			return "cpus", err
		}
	}
	return "", nil
}

// NumCPU is the most --cpus may ask for: the CPUs this process may run on
// (runtime.NumCPU: its affinity mask on Linux), as Docker counts them.
var NumCPU = runtime.NumCPU

// CheckCPUTime checks --cpu-time once read as a DURATION.
func CheckCPUTime(d time.Duration) error {
	if d < MinCPUTime {
		return fmt.Errorf("a CPU time of %v is too small: at least %v (the kernel counts in clock ticks)", d, MinCPUTime)
	}
	return nil
}

// plainPositive reads a decimal number greater than zero.
func plainPositive(s string) (float64, error) {
	if s == "" || s[0] == '-' || s[0] == '+' {
		return 0, strconv.ErrSyntax
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f <= 0 {
		return 0, strconv.ErrSyntax
	}
	return f, nil
}

// Size says a number of bytes in binary units, as every line of contain
// does: "100 MiB", "1.5 GiB".
func Size(b uint64) string { return report.Size(b) }
