//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// What contain says of a limit is what happened: one count of the tree's
// processes (the report's peak_processes is limits.pids.peak), a peak past
// the limit is the limit exceeded, the tree ends with 137 and nothing of it
// survives, and the closing line says a CPU share held the tree, not that
// it ended anything. The overshoot's size is measured, not asserted (a
// loaded 2-core machine stretches it): bench/pids-overshoot.sh.

// TestLimitPidsTruth: --pids 20 against a fork loop whose every child lives
// on (sleep 30, its PID written down), in every mode where contain samples
// the limit: exit 137, the stderr line, limits.pids exceeded with its peak
// the report's peak_processes, the count that tripped the limit no higher
// than the peak, the peak no higher than the processes the loop started
// (contain never counts what was not there), and every one of them gone.
func TestLimitPidsTruth(t *testing.T) {
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			path := filepath.Join(dir, "report.json")
			loop := fmt.Sprintf(`while :; do sleep 30 & echo $! >> %s/pids; done`, dir)
			res := run(t, m.o, "run", "-v", "--report", path, "--pids", "20", "-t", "20", "--", "sh", "-c", loop)
			pids := pidLines(t, filepath.Join(dir, "pids"))
			for _, pid := range pids {
				killOnCleanup(t, pid)
			}
			wantCode(t, res, 137)
			if left := testtool.Living(pids); len(left) > 0 {
				t.Errorf("%d of the loop's %d children outlived contain: %v", len(left), len(pids), left)
			}
			r := readReport(t, path)
			l, ok := r.Limits["pids"]
			if !ok || l.Peak == nil {
				t.Fatalf("report limits.pids = %+v", l)
			}
			peak := int(*l.Peak)
			if !l.Exceeded || l.Action != "killed the tree" || peak <= 20 {
				t.Errorf("limits.pids: exceeded %v, action %q, peak %d; want exceeded, killed, past 20", l.Exceeded, l.Action, peak)
			}
			if p := r.Resources.PeakProcesses; p == nil || *p != peak {
				t.Errorf("resources.peak_processes %v beside limits.pids.peak %d: two counts of one tree (absent: %q)", p, peak, r.Resources.Absent["peak_processes"])
			}
			// The sh, each sleep it wrote down, and at most one child it
			// forked and was stopped before writing: the most there were.
			if started := len(pids) + 2; peak > started {
				t.Errorf("peak %d, but the loop started at most %d processes", peak, started)
			}
			said := regexp.MustCompile(`contain: process limit 20 exceeded: (\d+) processes were alive`).FindStringSubmatch(res.stderr)
			if said == nil {
				t.Fatalf("no line that the limit was exceeded:\n%s", res.stderr)
			}
			if n, _ := strconv.Atoi(said[1]); n <= 20 || n > peak {
				t.Errorf("the line says %d processes, the report's peak %d", n, peak)
			}
			if !strings.Contains(res.stderr, fmt.Sprintf("peak %d processes", peak)) {
				t.Errorf("the done line does not give the peak %d:\n%s", peak, finalLine(res.stderr))
			}
			t.Logf("%s: peak %d, %d started, %s", m.name, peak, len(pids), l.EnforcedBy)
		})
	}
}

// TestLimitCPUsDoneLine: a share that held the tree is said as such on the
// done line, "held to 0.1 CPUs", never as a limit exceeded. A tenth of a
// CPU, so that the spinner reaches it however busy the machine is: at
// half a CPU, beside two CPU hogs on two cores, it got a third of one,
// was never held, and the line rightly said nothing of it.
func TestLimitCPUsDoneLine(t *testing.T) {
	res := run(t, runOpts{}, "run", "-v", "--cpus", "0.1", "-t", "1.5", "--", hog, "spin")
	wantCode(t, res, 124)
	done := finalLine(res.stderr)
	if !strings.Contains(done, "done: killed by SIGTERM (timed out) (held to 0.1 CPUs),") || strings.Contains(done, "exceeded") {
		t.Errorf("done line %q; want (held to 0.1 CPUs) and no 'exceeded'", done)
	}
}

// TestLimitSizeFormat: the done line says sizes as the other lines do:
// "64 MiB", not "64.0 MiB".
func TestLimitSizeFormat(t *testing.T) {
	res := run(t, runOpts{}, "run", "-v", "--memory", "64M", "--", hog, "mem", "16", "20")
	wantCode(t, res, 137)
	done := finalLine(res.stderr)
	if !strings.Contains(done, "(memory limit 64 MiB exceeded: ") || regexp.MustCompile(`\d\.0 [KMGT]iB`).MatchString(done) {
		t.Errorf("done line %q; want 64 MiB and no size with a trailing .0", done)
	}
	if !strings.Contains(res.stderr, "contain: memory limit 64 MiB exceeded: ") {
		t.Errorf("stderr:\n%s", res.stderr)
	}
}

// TestLimitStrictRefusal: --strict-limits's refusal starts with what
// happened, then why.
func TestLimitStrictRefusal(t *testing.T) {
	dir := sharedDir(t)
	ran := filepath.Join(dir, "ran")
	res := run(t, runOpts{env: []string{"CONTAIN_DISABLE=cgroup"}}, "run", "--strict-limits", "--pids", "20", "--", "touch", ran)
	wantCode(t, res, 125)
	if !strings.HasPrefix(res.stderr, "contain: refusing to run: --pids 20 cannot be enforced by the kernel here (") || strings.Count(res.stderr, "\n") != 1 {
		t.Errorf("stderr %q; want one line starting contain: refusing to run: --pids 20 cannot be enforced", res.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("refused, yet COMMAND ran")
	}
}

// pidLines reads a file of PIDs, one a line (none if it is missing).
func pidLines(t *testing.T, path string) []int {
	t.Helper()
	b, _ := os.ReadFile(path)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// finalLine is the last line of s.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
