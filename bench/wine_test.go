//go:build linux

package bench

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/winetest"
)

// BenchmarkStartupWine: the Windows start-up figure, under Wine: contain
// run -- cmd /c exit 0 against the same minimal Go exec-and-wait wrapper
// (bench/baseline), both Windows builds run under Wine, in turns whose
// order rotates. Wine's own start of a process is in both.
func BenchmarkStartupWine(b *testing.B) {
	if why := winetest.Missing(); why != "" {
		b.Skip(why)
	}
	dir := b.TempDir()
	w, err := winetest.Start(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	contain, baseline := filepath.Join(dir, "contain.exe"), filepath.Join(dir, "baseline.exe")
	for _, args := range [][]string{
		append(append([]string{"build"}, buildFlags...), "-o", contain, ".."),
		{"build", "-o", baseline, "./baseline"},
	} {
		if err := winetest.BuildWindows(args...); err != nil {
			b.Fatal(err)
		}
	}
	progs := [][]string{{"wine", baseline, "cmd", "/c", "exit 0"}, {"wine", contain, "run", "--", "cmd", "/c", "exit 0"}}
	times := make([][]time.Duration, len(progs))
	for i := 0; i < b.N; i++ {
		for j := range progs {
			k := (i + j) % len(progs)
			cmd := exec.Command(progs[k][0], progs[k][1:]...)
			cmd.Env = w.Env
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("%q: %v", progs[k], err)
			}
			times[k] = append(times[k], time.Since(start))
		}
	}
	mb, mc := median(times[0]), median(times[1])
	b.ReportMetric(ms(mb), "baseline-ms")
	b.ReportMetric(ms(mc), "contain-ms")
	b.ReportMetric(float64(mc)/float64(mb), "ratio")
}
