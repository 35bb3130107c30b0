//go:build linux && containvm

package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMeasure measures, for the GUIDE, how far past a limit a tree gets,
// the kernel against sampling: a tree growing at 100 MiB/s against
// --memory 100M, a fork bomb against --pids 20, a spinning process
// against --cpu-time 500ms and against --cpus 0.5, five rounds each. The
// kernel holds a limit where contain is alone in its cgroup; it samples
// where another process shares that cgroup (the controllers cannot be
// enabled below it). It runs only when asked (CONTAIN_VM_MEASURE=1 go test
// -v -run TestKernel ./tests/vm), and asserts nothing but that each mode
// was the one asked for.
func TestMeasure(t *testing.T) {
	if os.Getenv("CONTAIN_VM_MEASURE") != "1" {
		t.Skip("a measurement, run only with CONTAIN_VM_MEASURE=1 (the VM's init selects it then)")
	}
	w := everyone[0]
	const rounds = 5
	for _, kernel := range []bool{true, false} {
		mode := "kernel"
		if !kernel {
			mode = "sampling"
		}
		var mem, pids, times, cpus []string
		for range rounds {
			dir, d := group(t, w), openDir(t)
			if !kernel {
				stopOther := besideContain(t, dir)
				defer stopOther()
			}
			r := containRun(t, w, dir, append([]string{"--memory", "100M", "--"}, helperCmd("grow", d, "400", "100")...)...)
			if by := limitOf(t, r, "--memory").EnforcedBy; strings.HasPrefix(by, "cgroup") != kernel {
				t.Fatalf("%s: --memory enforced by %s", mode, by)
			}
			b, _ := os.ReadFile(filepath.Join(d, "mib"))
			peak := "-"
			if p := limitOf(t, r, "--memory").Peak; p != nil {
				peak = fmt.Sprintf("%.1f", *p/(1<<20))
			}
			mem = append(mem, fmt.Sprintf("exit %d, the hog had allocated %s MiB, contain's peak %s MiB", r.code, strings.TrimSpace(string(b)), peak))
		}
		for range rounds {
			dir := group(t, w)
			if !kernel {
				stopOther := besideContain(t, dir)
				defer stopOther()
			}
			r := containRun(t, w, dir, append([]string{"--cpu-time", "500ms", "-t", "30", "--"}, helperCmd("spin", "60s")...)...)
			cpu := -1.0
			if res := r.report.Resources; res.CPUUserSeconds != nil {
				cpu = *res.CPUUserSeconds + *res.CPUSystemSeconds
			}
			times = append(times, fmt.Sprintf("exit %d, CPU %.3f s (%s)", r.code, cpu, limitOf(t, r, "--cpu-time").EnforcedBy))
			r = containRun(t, w, dir, append([]string{"--cpus", "0.5", "--"}, helperCmd("spin", "2s")...)...)
			if res := r.report.Resources; res.CPUUserSeconds != nil {
				cpu = *res.CPUUserSeconds + *res.CPUSystemSeconds
			}
			cpus = append(cpus, fmt.Sprintf("exit %d, %.2f of a CPU (%s)", r.code, cpu/2, limitOf(t, r, "--cpus").EnforcedBy))
		}
		for range rounds {
			dir := group(t, w)
			if !kernel {
				stopOther := besideContain(t, dir)
				defer stopOther()
			}
			done, most := make(chan struct{}), make(chan int)
			go func() { most <- watchProcs(dir, done) }()
			r := containRun(t, w, dir, "--pids", "20", "-t", "3", "--", "sh", "-c", "f() { f & f & }; f 2>/dev/null; exec sleep 30")
			close(done)
			if by := limitOf(t, r, "--pids").EnforcedBy; strings.HasPrefix(by, "cgroup") != kernel {
				t.Fatalf("%s: --pids enforced by %s", mode, by)
			}
			pids = append(pids, fmt.Sprintf("exit %d, at most %d processes seen", r.code, <-most))
		}
		t.Logf("%s, --memory 100M, a tree growing at 100 MiB/s to 400 MiB:\n  %s", mode, strings.Join(mem, "\n  "))
		t.Logf("%s, --pids 20, f() { f & f & }:\n  %s", mode, strings.Join(pids, "\n  "))
		t.Logf("%s, --cpu-time 500ms, one spinning process:\n  %s", mode, strings.Join(times, "\n  "))
		t.Logf("%s, --cpus 0.5, one process spinning for 2 s:\n  %s", mode, strings.Join(cpus, "\n  "))
	}
}

// besideContain starts a process in dir before contain, so that contain
// cannot enable controllers below it and samples.
func besideContain(t *testing.T, dir string) func() {
	other := exec.Command("sleep", "600")
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	other.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	return func() { other.Process.Kill(); other.Wait() }
}
