package limit

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{
		"512M": 512 << 20, "2G": 2 << 30, "2GiB": 2 << 30, "2gb": 2 << 30, "1.5g": 3 << 29,
		"100MiB": 100 << 20, "8388608": 8 << 20, "4096K": 4 << 20, "1T": 1 << 40, " 64m ": 64 << 20, "8388608b": 8 << 20,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1M", "+5M", "M", "12X", "1e400", "nan", "1K", "3M", "inf", "5 5M"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
	if _, err := ParseSize("1K"); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("ParseSize(1K): %v, want 'too small'", err)
	}
}

func TestParsePidsCPUs(t *testing.T) {
	if n, err := ParsePids("50"); n != 50 || err != nil {
		t.Errorf("ParsePids(50) = %d, %v", n, err)
	}
	for _, bad := range []string{"0", "-3", "1.5", "x", "", "99999999999999999999", "4194305"} {
		if n, err := ParsePids(bad); err == nil {
			t.Errorf("ParsePids(%q) = %d, want an error", bad, n)
		}
	}
	for in, want := range map[string]float64{"1.5": 1.5, "150%": 1.5, "50 %": 0.5, "0.01": 0.01, "4": 4} {
		if got, err := ParseCPUs(in, 4); err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "0.001", "0.5%", "%", "x", "inf", "", "NaN", "-inf", "+1", "0%", "1e300", "4.01", "401%", "1e-300"} {
		if got, err := ParseCPUs(bad, 4); err == nil {
			t.Errorf("ParseCPUs(%q) = %v, want an error", bad, got)
		}
	}
	if CheckCPUTime(5*time.Millisecond) == nil || CheckCPUTime(0) == nil || CheckCPUTime(time.Second) != nil {
		t.Error("CheckCPUTime: wrong verdicts")
	}
}

func TestSize(t *testing.T) {
	for in, want := range map[uint64]string{100 << 20: "100 MiB", 3 << 29: "1.5 GiB", 512: "512 bytes", 1536: "1.5 KiB",
		100<<20 + 1000: "100 MiB", 5452595: "5.2 MiB", 1<<20 - 10: "1 MiB", 64 << 20: "64 MiB"} {
		if got := Size(in); got != want {
			t.Errorf("Size(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestWatchCheck(t *testing.T) {
	w := NewWatch(Set{Memory: 100 << 20, Pids: 10, CPUTime: 2 * time.Second})
	at := time.Unix(1000, 0)
	if _, over := w.Check(Sample{At: at, Memory: 50 << 20, Procs: 3, CPU: time.Second}); over {
		t.Fatal("under every limit, yet over")
	}
	if k, over := w.Check(Sample{At: at, Memory: 101 << 20, Procs: 3, CPU: time.Second}); !over || k != Memory {
		t.Errorf("over memory: %v %v", k, over)
	}
	if k, over := w.Check(Sample{At: at, Memory: 1, Procs: 11, CPU: time.Second}); !over || k != Pids {
		t.Errorf("over pids: %v %v", k, over)
	}
	if k, over := w.Check(Sample{At: at, Memory: 1, Procs: 1, CPU: 2 * time.Second}); !over || k != CPUTime {
		t.Errorf("over CPU time: %v %v", k, over)
	}
	// Held by the kernel: contain does not act on its samples of it, but
	// CPU time is always polled.
	w.Enforce(Memory, "cgroup memory.max", true)
	w.Enforce(CPUTime, "cgroup cpu.stat, polled every 50ms", true)
	if k, over := w.Check(Sample{At: at, Memory: 200 << 20, Procs: 1, CPU: 3 * time.Second}); !over || k != CPUTime {
		t.Errorf("kernel memory, CPU over: %v %v", k, over)
	}
	w.Hit(Memory, "killed the tree")
	w.Hit(Memory, "second action, not kept")
	rep := w.Report()
	m := rep["memory"]
	if !m.Exceeded || m.Action != "killed the tree" || m.EnforcedBy != "cgroup memory.max" || m.Peak == nil || *m.Peak != 200<<20 || m.Unit != "bytes" || m.Value != 100<<20 {
		t.Errorf("report memory = %+v", m)
	}
	// A peak past the limit is the limit exceeded, even with nothing
	// done of it: never a peak of 11 beside "exceeded": false.
	if p := rep["pids"]; !p.Exceeded || p.Peak == nil || *p.Peak != 11 || !strings.HasPrefix(p.Action, "none: ") {
		t.Errorf("report pids = %+v", p)
	}
	if _, ok := rep["cpus"]; ok {
		t.Error("report has cpus, not asked")
	}
	if got := w.Message(Memory, "the tree's resident memory reached 200 MiB"); got != "memory limit 100 MiB exceeded: the tree's resident memory reached 200 MiB (cgroup memory.max); killed the tree" {
		t.Errorf("Message = %q", got)
	}
	if (&Watch{}).Report() != nil || NewWatch(Set{}).Report() != nil {
		t.Error("no limits, yet a report")
	}
}

// TestThrottle runs a tree that would use 1 CPU whenever it runs under a
// 0.5 share, on a simulated clock: it may run half the time.
func TestThrottle(t *testing.T) {
	for _, share := range []float64{0.5, 0.25, 1.5} {
		busy := 2.0 // CPUs the tree uses while it runs
		th := &Throttle{CPUs: share}
		now, cpu := time.Unix(0, 0), time.Duration(0)
		start := now
		for now.Sub(start) < 60*time.Second {
			stop := th.Step(Sample{At: now, CPU: cpu})
			if stop > 0 {
				now = now.Add(stop) // stopped: no CPU used
				continue
			}
			now = now.Add(Every)
			cpu += time.Duration(float64(Every) * busy)
		}
		got := cpu.Seconds() / now.Sub(start).Seconds()
		if math.Abs(got-share) > share*0.05 {
			t.Errorf("share %v: the tree got %.3f CPUs", share, got)
		}
	}
	// A tree that uses less than its share is never stopped.
	th := &Throttle{CPUs: 1}
	now, cpu := time.Unix(0, 0), time.Duration(0)
	for i := 0; i < 1000; i++ {
		if d := th.Step(Sample{At: now, CPU: cpu}); d > 0 {
			t.Fatalf("step %d: stopped %v a tree using half its share", i, d)
		}
		now, cpu = now.Add(Every), cpu+Every/2
	}
}

// TestParseCPUsMax: a share above the machine's CPUs is refused, saying the
// range as Docker does; the machine's count itself is accepted.
func TestParseCPUsMax(t *testing.T) {
	if got, err := ParseCPUs("2", 2); err != nil || got != 2 {
		t.Errorf("ParseCPUs(2, 2) = %v, %v", got, err)
	}
	if got, err := ParseCPUs("200%", 2); err != nil || got != 2 {
		t.Errorf("ParseCPUs(200%%, 2) = %v, %v", got, err)
	}
	for _, bad := range []string{"1e300", "2.5", "250%", "1e19"} {
		_, err := ParseCPUs(bad, 2)
		if err == nil || !strings.Contains(err.Error(), "the range of CPUs is from 0.01 to 2") {
			t.Errorf("ParseCPUs(%q, 2): %v", bad, err)
		}
	}
	if NumCPU() < 1 {
		t.Errorf("NumCPU() = %d", NumCPU())
	}
}

// TestWatchPace: at Fast while the process count grows (or memory grows
// past half its limit), backing off to Every while nothing grows; a limit
// the kernel holds paces nothing.
func TestWatchPace(t *testing.T) {
	w := NewWatch(Set{Pids: 20, Memory: 100 << 20})
	at := time.Unix(1000, 0)
	s := func(procs int, mem uint64) Sample { return Sample{At: at, Procs: procs, Memory: mem} }
	if d, share := w.Pace(Sample{}, s(1, 1), 0); d != Fast || share != SteadyShare {
		t.Errorf("first sample: %v ×%d, want %v ×%d", d, share, Fast, SteadyShare)
	}
	if d, share := w.Pace(s(1, 1), s(2, 1), Every); d != Fast || share != GrowingShare {
		t.Errorf("one more process: %v ×%d, want %v ×%d", d, share, Fast, GrowingShare)
	}
	d := Fast
	for i := 0; i < 20; i++ {
		d, _ = w.Pace(s(5, 1), s(5, 1), d)
	}
	if d != Every {
		t.Errorf("steady: %v, want %v", d, Every)
	}
	if d, _ := w.Pace(s(5, 10<<20), s(5, 20<<20), Every); d == Fast {
		t.Error("memory growing far below its limit: fast")
	}
	if d, _ := w.Pace(s(5, 50<<20), s(5, 60<<20), Every); d != Fast {
		t.Errorf("memory growing past half its limit: %v", d)
	}
	w.Enforce(Pids, "cgroup pids.max", true)
	w.Enforce(Memory, "cgroup memory.max", true)
	if d, _ := w.Pace(s(1, 50<<20), s(30, 90<<20), Every); d == Fast {
		t.Error("held by the kernel, yet fast")
	}
}

// TestWatchCount: every count is one figure, the peak the report gives,
// and a count past a limit contain holds is over; the kernel's is not.
func TestWatchCount(t *testing.T) {
	w := NewWatch(Set{Pids: 20})
	for _, n := range []int{3, 19, 20} {
		if w.Count(n) {
			t.Errorf("Count(%d) over a limit of 20", n)
		}
	}
	if !w.Count(22) || !w.Count(21) {
		t.Error("Count past 20 not over")
	}
	if p, ok := w.Peak(Pids); !ok || p != 22 {
		t.Errorf("Peak = %v, %v; want 22", p, ok)
	}
	w.Hit(Pids, "killed the tree")
	if r := w.Report()["pids"]; !r.Exceeded || r.Action != "killed the tree" || *r.Peak != 22 {
		t.Errorf("report pids = %+v", r)
	}
	k := NewWatch(Set{Pids: 20})
	k.Enforce(Pids, "cgroup pids.max", true)
	if k.Count(30) {
		t.Error("the kernel holds it, yet over")
	}
	if r := NewWatch(Set{Memory: 100 << 20}); r.Count(5) {
		t.Error("no process limit, yet over")
	}
}

// TestSetCheck: a Set given as numbers (a library's Options, a Spec) is
// refused where the parsers refuse what they read, with the same words,
// and the option named; zero is no limit.
func TestSetCheck(t *testing.T) {
	NumCPU = func() int { return 4 }
	defer func() { NumCPU = runtime.NumCPU }()
	for _, tc := range []struct {
		set    Set
		option string
		parsed func() error // the parser's refusal of the same value
	}{
		{Set{}, "", nil},
		{Set{Memory: 64 << 20, Pids: 5, CPUTime: time.Second, CPUs: 1.5}, "", nil},
		{Set{Memory: 1 << 20}, "memory", func() error { _, err := ParseSize("1048576"); return err }},
		{Set{Pids: -1}, "pids", func() error { _, err := ParsePids("-1"); return err }},
		{Set{Pids: MaxPids + 1}, "pids", func() error { _, err := ParsePids(strconv.Itoa(MaxPids + 1)); return err }},
		{Set{CPUTime: time.Millisecond}, "cpu-time", func() error { return CheckCPUTime(time.Millisecond) }},
		{Set{CPUTime: -time.Second}, "cpu-time", nil},
		{Set{CPUs: 0.001}, "cpus", func() error { _, err := ParseCPUs("0.001", 4); return err }},
		{Set{CPUs: 8}, "cpus", func() error { _, err := ParseCPUs("8", 4); return err }},
		{Set{CPUs: math.NaN()}, "cpus", nil},
		{Set{CPUs: math.Inf(1)}, "cpus", nil},
	} {
		opt, err := tc.set.Check()
		if opt != tc.option || (err != nil) != (tc.option != "") {
			t.Errorf("%+v: Check says %q, %v; want %q", tc.set, opt, err, tc.option)
			continue
		}
		if tc.parsed == nil {
			continue
		}
		perr := tc.parsed()
		if perr == nil {
			t.Errorf("%+v: the parser takes what Check refuses", tc.set)
			continue
		}
		if strings.ReplaceAll(perr.Error(), `"`, "") != err.Error() {
			t.Errorf("%+v: Check says %q, the parser %q", tc.set, err, perr)
		}
	}
}
