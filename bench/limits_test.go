//go:build linux

package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkReapFDLimit: contain reap of 1,000 orphaned sleepers under
// RLIMIT_NOFILE 64, soft and hard (prlimit --nofile=64:64), from start to
// the moment none is left, against the same reap without the limit, in
// alternating turns. Reap pins, checks and signals as many processes at a
// time as the limit allows.
func BenchmarkReapFDLimit(b *testing.B) {
	var limited, free []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < 2; j++ {
			b.StopTimer()
			tool := fmt.Sprintf("BENCHREAPLIM%d_%d", i, j)
			cmds := startSleepers(b, sleepers, fmt.Sprintf("%s:%d", tool, deadPID(b)))
			b.StartTimer()
			if (i+j)%2 == 0 {
				limited = append(limited, timeRun(b, nil, "prlimit", "--nofile=64:64", "--", containBin, "reap", "-o", tool))
			} else {
				free = append(free, timeRun(b, nil, containBin, "reap", "-o", tool))
			}
			for _, c := range cmds {
				if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid)); err == nil {
					if i := strings.LastIndexByte(string(st), ')'); i > 0 && st[i+2] != 'Z' {
						b.Fatalf("sleeper %d is alive after reap returned", c.Process.Pid)
					}
				}
			}
		}
	}
	b.ReportMetric(ms(median(limited)), "nofile64-ms")
	b.ReportMetric(ms(median(free)), "unlimited-ms")
}
