//go:build linux

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sleepers is how many tagged processes the ps and reap benchmarks run with.
const sleepers = 1000

// startSleepers starts n processes `sleep 600` tagged value, each in its
// own session, reaped by this process when they end.
func startSleepers(b *testing.B, n int, value string) []*exec.Cmd {
	b.Helper()
	env := append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+value)
	cmds := make([]*exec.Cmd, 0, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command("sleep", "600")
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			b.Fatalf("starting sleeper %d: %v", i, err)
		}
		go cmd.Wait()
		cmds = append(cmds, cmd)
	}
	b.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
	})
	// Wait until all have exec'd: their tag is then readable.
	for _, c := range cmds {
		for !strings.Contains(readEnv(c.Process.Pid), value) {
			time.Sleep(time.Millisecond)
		}
	}
	return cmds
}

func readEnv(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return string(b)
}

// deadPID is a PID no process can have (above pid_max): the originator of
// the benchmark's orphaned sessions.
func deadPID(b *testing.B) int {
	raw, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		b.Fatal(err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		b.Fatal(err)
	}
	return max + 1
}

// BenchmarkPs: contain ps --format json against procps' ps axe -o pid,args
// (which reads the same environments), in alternating turns, with 1,000
// tagged sleepers. Goal: median ratio at most 0.5.
func BenchmarkPs(b *testing.B) {
	startSleepers(b, sleepers, fmt.Sprintf("BENCHPS:%d", deadPID(b)))
	progs := [][]string{{"ps", "axe", "-o", "pid,args"}, {containBin, "ps", "--format", "json"}}
	times := make([][]time.Duration, len(progs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range progs {
			k := (i + j) % len(progs)
			times[k] = append(times[k], timeRun(b, nil, progs[k]...))
		}
	}
	mp, mc := median(times[0]), median(times[1])
	b.ReportMetric(ms(mp), "procps-ms")
	b.ReportMetric(ms(mc), "contain-ms")
	b.ReportMetric(float64(mc)/float64(mp), "ratio")
}

// BenchmarkReap: one contain reap of 1,000 orphaned sleepers, from start to
// the moment none is left (reap returns only then; the benchmark checks).
// Goal: at most 0.5 s. The baseline is contain reap with nothing to do.
func BenchmarkReap(b *testing.B) {
	var full, empty []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tool := fmt.Sprintf("BENCHREAP%d", i)
		cmds := startSleepers(b, sleepers, fmt.Sprintf("%s:%d", tool, deadPID(b)))
		b.StartTimer()
		empty = append(empty, timeRun(b, nil, containBin, "reap", "-o", tool+"none"))
		full = append(full, timeRun(b, nil, containBin, "reap", "-o", tool))
		for _, c := range cmds {
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid)); err == nil {
				if i := strings.LastIndexByte(string(st), ')'); i > 0 && st[i+2] != 'Z' {
					b.Fatalf("sleeper %d is alive after reap returned", c.Process.Pid)
				}
			}
		}
	}
	b.ReportMetric(ms(median(full)), "reap1000-ms")
	b.ReportMetric(ms(median(empty)), "nothing-ms")
}
