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
	w, dir := startWine(b)
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

// BenchmarkLibraryPerCommandWine: what a Windows Go program pays per
// command through package containment (Start and Wait of cmd /c exit 0
// in one long-lived host: one holder, the job's handle duplicated into
// the program), against plain os/exec in the same host, under Wine, in
// turns: 25 commands a turn, the median of each. Goal: per-cmd-ratio
// within 2.
func BenchmarkLibraryPerCommandWine(b *testing.B) {
	w, dir := startWine(b)
	libhost := filepath.Join(dir, "libhost.exe")
	if err := winetest.BuildWindows("build", "-o", libhost, "./libhost"); err != nil {
		b.Fatal(err)
	}
	perCommand(b, func(mode string) *exec.Cmd {
		cmd := exec.Command("wine", libhost, "each", "25", mode, "cmd", "/c", "exit 0")
		cmd.Env = w.Env
		return cmd
	})
}

// startWine starts a Wine prefix of the benchmark's own in a directory
// that is removed at the end, and stops it then; it skips the benchmark
// where Wine is missing.
func startWine(b *testing.B) (*winetest.Wine, string) {
	if why := winetest.Missing(); why != "" {
		b.Skip(why)
	}
	dir := b.TempDir()
	w, err := winetest.Start(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	return w, dir
}
