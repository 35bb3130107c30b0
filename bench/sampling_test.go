//go:build linux

package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkSampling: what holding limits by sampling costs. COMMAND is a
// tree of 100 sleeping processes that lasts two seconds; contain runs it
// without limits and with --memory, --pids and --cpu-time set far above
// what it uses (so that every sample is taken and none acts), in turns.
// The figure is contain's CPU time with its tree's (which sleeps: almost
// nothing), as a ratio to the same run without limits, per mode: "cgroup"
// (as root: samples read the cgroup), "tracking" (cgroup and subreaper
// off, as for most users and on macOS: samples scan every process).
func BenchmarkSampling(b *testing.B) {
	script := `i=0; while [ $i -lt 100 ]; do sleep 2 & i=$((i+1)); done; wait`
	limits := []string{"--memory", "1G", "--pids", "1000", "--cpu-time", "1h"}
	for _, mode := range []struct{ name, env string }{{"cgroup", ""}, {"tracking", "CONTAIN_DISABLE=cgroup,subreaper"}} {
		b.Run(mode.name, func(b *testing.B) {
			var plain, limited, plainWall, limitedWall []time.Duration
			for i := 0; i < b.N; i++ {
				for j := 0; j < 2; j++ {
					args := []string{"run", "--"}
					with := (i+j)%2 == 1
					if with {
						args = append(append([]string{"run"}, limits...), "--")
					}
					cmd := exec.Command(containBin, append(args, "sh", "-c", script)...)
					cmd.Env = append(os.Environ(), mode.env)
					start := time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatalf("%v: %v", cmd.Args, err)
					}
					wall := time.Since(start)
					cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
					if with {
						limited, limitedWall = append(limited, cpu), append(limitedWall, wall)
					} else {
						plain, plainWall = append(plain, cpu), append(plainWall, wall)
					}
				}
			}
			b.ReportMetric(ms(median(plain)), "plain-cpu-ms")
			b.ReportMetric(ms(median(limited)), "limits-cpu-ms")
			b.ReportMetric(float64(median(limited))/float64(median(plain)), "cpu-ratio")
			b.ReportMetric(float64(median(limitedWall))/float64(median(plainWall)), "wall-ratio")
		})
	}
}
