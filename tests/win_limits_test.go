//go:build windows

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/report"
)

// The whole-tree limits on Windows: the job object holds them; under
// Wine, which keeps a job object's limits but enforces none, contain
// samples the job's processes instead (docs/GUIDE.md, Limits on Windows).

// wantLimit fails unless the report's limit key was exceeded and was
// enforced by what by names (a prefix).
func wantLimit(t *testing.T, r report.Report, key, by string) report.Limit {
	t.Helper()
	l, ok := r.Limits[key]
	if !ok {
		t.Fatalf("the report has no %s limit: %+v", key, r.Limits)
	}
	if !l.Exceeded || l.Action == "" {
		t.Errorf("limits.%s: exceeded %v, action %q; want exceeded, with the action", key, l.Exceeded, l.Action)
	}
	if !strings.HasPrefix(l.EnforcedBy, by) {
		t.Errorf("limits.%s.enforced_by %q, want %q...", key, l.EnforcedBy, by)
	}
	return l
}

// wantLimitLine fails unless stderr has the line that says a limit ended
// the run, "contain: memory limit 100 MiB exceeded: ...", once (with -v
// too: it was said twice).
func wantLimitLine(t *testing.T, stderr, start string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(strings.TrimRight(line, "\r"), "contain: "+start) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("stderr has the line %q... %d times, want once:\n%s", "contain: "+start, n, stderr)
	}
}

// sampledOnWine is what enforces a memory or process limit: contain's
// sampling under Wine, the job object on Windows.
func sampledOnWine() string {
	if underWine() {
		return "sampling every"
	}
	return "job object"
}

// TestWinMemoryLimit: --memory 100M and a process that allocates and
// touches 8 MiB every 20 ms: the tree is killed, status 137, the line on
// stderr, the report's limits.memory exceeded. Under Wine contain's
// sampling of the working sets does it; on Windows, the job object
// (TestWinMemoryLimitJobObject says more).
func TestWinMemoryLimit(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	_, wait := startContain(t, asHelper("alloc", dir), "run", "-v", "--memory", "100M", "--report", path, "--", self(t))
	alloc := readRecord(t, dir, "alloc")
	res := wait()
	wantCode(t, res, 137)
	wantLimitLine(t, res.stderr, "memory limit 100 MiB exceeded")
	if !alloc.gone() {
		t.Errorf("the allocating process (PID %d) is still running", alloc.pid)
	}
	r := readReport(t, path)
	l := wantLimit(t, r, "memory", sampledOnWine())
	if l.Action != "killed the tree" {
		t.Errorf("limits.memory.action %q", l.Action)
	}
	if underWine() && (l.Peak == nil || *l.Peak <= 100<<20) {
		t.Errorf("limits.memory.peak %v, want above the limit it exceeded", l.Peak)
	}
	// What held it: the allocating process, first (the largest under
	// Wine; on Windows the one the job refused an allocation).
	if len(l.HeldBy) == 0 || l.HeldBy[0].PID != alloc.pid || l.HeldBy[0].RSSBytes == nil || *l.HeldBy[0].RSSBytes < 50<<20 {
		t.Errorf("limits.memory.held_by %+v, want the allocating process %d first", l.HeldBy, alloc.pid)
	}
	if !strings.Contains(res.stderr, fmt.Sprintf("; held by: %s (PID %d, ", l.HeldBy[0].Comm, alloc.pid)) {
		t.Errorf("the exceeded line does not name the allocating process:\n%s", res.stderr)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "allocated"))
	t.Logf("the process held %s MiB when it was ended; %s", got, strings.TrimSpace(res.stderr))
}

// TestWinMemoryLimitJobObject: on Windows the job object holds --memory
// (committed memory): the allocation past it fails, contain learns of it
// from the job's completion port and ends the tree: 137, as on Linux.
// The process never held more than the limit.
func TestWinMemoryLimitJobObject(t *testing.T) {
	needContain(t)
	if underWine() {
		t.Skip("Wine 8 keeps a job object's memory limit but does not enforce it (allocations past it succeed): there contain samples, TestWinMemoryLimit")
	}
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	res := run(t, asHelper("alloc", dir), "run", "-v", "--memory", "100M", "--report", path, "--", self(t))
	wantCode(t, res, 137)
	wantLimitLine(t, res.stderr, "memory limit 100 MiB exceeded")
	wantLimit(t, readReport(t, path), "memory", "job object")
	b, _ := os.ReadFile(filepath.Join(dir, "allocated"))
	if held, err := strconv.Atoi(string(b)); err != nil || held > 100 {
		t.Errorf("the process held %q MiB, past the limit of 100", b)
	}
}

// TestWinPidsLimit: --pids 5 and a process that starts a child every
// 20 ms. Under Wine contain samples the job's processes and kills the
// tree once more than 5 are alive: 137, the line on stderr. On Windows
// the job object refuses the sixth start, and the run goes on to its
// timeout (124) with the refusals in the report.
func TestWinPidsLimit(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	args := []string{"run", "-v", "--pids", "5", "--report", path}
	if !underWine() {
		args = append(args, "-t", "5")
	}
	_, wait := startContain(t, asHelper("forker", dir), append(args, "--", self(t))...)
	forker := readRecord(t, dir, "forker")
	res := wait()
	r := readReport(t, path)
	if !underWine() {
		wantCode(t, res, 124)
		if l := wantLimit(t, r, "pids", "job object"); !strings.HasPrefix(l.Action, "refused ") {
			t.Errorf("limits.pids.action %q, want the refused starts", l.Action)
		}
		return
	}
	wantCode(t, res, 137)
	wantLimitLine(t, res.stderr, "process limit 5 exceeded")
	if !forker.gone() {
		t.Errorf("the forking process (PID %d) is still running", forker.pid)
	}
	l := wantLimit(t, r, "pids", "sampling every")
	if l.Peak == nil || *l.Peak <= 5 {
		t.Errorf("limits.pids.peak %v, want above 5", l.Peak)
	}
	// What held it: the forking process started them all.
	if len(l.HeldBy) == 0 || l.HeldBy[0].PID != forker.pid || l.HeldBy[0].Children < 3 {
		t.Errorf("limits.pids.held_by %+v, want the forking process %d first", l.HeldBy, forker.pid)
	}
}

// TestWinCPUTimeLimit: --cpu-time 1s and a tree whose processes each spin
// for 0.3 s, one after the other: only with the ended ones counted does
// the tree reach 1 s. It acts as the timeout: status 124, the line on
// stderr, the report's limits.cpu_time exceeded (-t 40 bounds the test;
// its timeout would give 124 too, but no such line).
func TestWinCPUTimeLimit(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	start := time.Now()
	res := run(t, asHelper("spinners", dir), "run", "-v", "-t", "40", "--cpu-time", "1s", "--report", path, "--", self(t))
	wantCode(t, res, 124)
	wantLimitLine(t, res.stderr, "CPU time limit 1s exceeded")
	by := "job accounting"
	if underWine() {
		by = "sampling every"
	}
	l := wantLimit(t, readReport(t, path), "cpu_time", by)
	if l.Peak == nil || *l.Peak < 1 {
		t.Errorf("limits.cpu_time.peak %v, want at least 1 s", l.Peak)
	}
	// The action says what the timeout did: the event delivered, or the
	// job terminated where it could not be.
	if !strings.HasPrefix(l.Action, "timed out: ") || len(l.Action) == len("timed out: ") {
		t.Errorf("limits.cpu_time.action %q, want what timing out did", l.Action)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the run took %v: the tree cannot have used 1 s of CPU time on one CPU at a time", took)
	}
}

// TestWinCPUsLimit: --cpus 0.1 holds a process that spins for 3 s to a
// tenth of a CPU, give or take: the job object's CPU rate cap on Windows;
// NtSuspendProcess and NtResumeProcess under Wine. (On a machine too busy
// to give the spinner its tenth, nothing is throttled, and the report
// must not say it was.) Under Wine the throttle is contain's own, as
// prompt as the machine lets contain run: on a busy machine (two CPU
// hogs beside CI's tests) it let the spinner have 0.27 CPUs once. So the
// spinner is run without a limit first, and the limit must hold it to a
// quarter of a CPU or to half of what it got without one.
func TestWinCPUsLimit(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	spun := func(res result) float64 {
		t.Helper()
		wantCode(t, res, 0)
		f := strings.Fields(res.stdout)
		if len(f) != 2 {
			t.Fatalf("the spinner printed %q", res.stdout)
		}
		cpu, _ := strconv.Atoi(f[0])
		wall, _ := strconv.Atoi(f[1])
		return float64(cpu) / float64(wall)
	}
	free := spun(run(t, asHelper("spin", dir), "run", "--", self(t), "3"))
	path := filepath.Join(dir, "report.json")
	share := spun(run(t, asHelper("spin", dir), "run", "-v", "--cpus", "0.1", "--report", path, "--", self(t), "3"))
	t.Logf("the spinner used %.2f CPUs without a limit, %.2f under --cpus 0.1", free, share)
	if share > 0.25 && share > free/2 {
		t.Errorf("the spinner used %.2f CPUs under --cpus 0.1 (%.2f without)", share, free)
	}
	l := readReport(t, path).Limits["cpus"]
	by := "job object (CPU rate hard cap)"
	if underWine() {
		by = "NtSuspendProcess/NtResumeProcess"
		if (!l.Exceeded || l.Action != "throttled") && share > 0.11 {
			t.Errorf("the spinner used %.2f CPUs, and limits.cpus says exceeded %v, action %q; want throttled", share, l.Exceeded, l.Action)
		}
	}
	if !strings.HasPrefix(l.EnforcedBy, by) {
		t.Errorf("limits.cpus.enforced_by %q, want %q...", l.EnforcedBy, by)
	}
}

// TestWinStrictLimits: --strict-limits under Wine, where no limit is held
// by the job object, exits 125 with one line before COMMAND runs (COMMAND
// would print its tag); on Windows the job object holds them all, and
// COMMAND runs.
func TestWinStrictLimits(t *testing.T) {
	needContain(t)
	o := asHelper("env", tmpDir(t))
	res := run(t, o, "run", "--strict-limits", "--memory", "100M", "--pids", "50", "--", self(t))
	if !underWine() {
		wantCode(t, res, 0)
		if res.stdout == "" {
			t.Error("COMMAND did not run")
		}
		return
	}
	wantCode(t, res, 125)
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: refusing to run: --memory 100 MiB cannot be enforced by the kernel here (Wine") {
		t.Errorf("stderr %q, want one line that names --memory and Wine", res.stderr)
	}
	if res.stdout != "" {
		t.Errorf("COMMAND ran: it printed %q", res.stdout)
	}
	// Without --strict-limits COMMAND runs, its limits sampled.
	res = run(t, o, "run", "--memory", "100M", "--pids", "50", "--", self(t))
	wantCode(t, res, 0)
	if res.stdout == "" {
		t.Error("without --strict-limits, COMMAND did not run")
	}
}
