//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

// Whole-tree limits, end to end: each limit against a tree whose hog is
// an escapee (setsid, double-forked: no longer COMMAND's child nor in its
// process group or session), as root (cgroup), as nobody (no cgroup: the
// shim and the scans) and with the portable core alone (the macOS logic).
// On this machine's hybrid layout no controller is in cgroup v2, so the
// limits are sampled; TestLimitKernelMemory covers the kernel's hold where
// a controller is delegated.

// escapee is a shell line that starts hog ARGS as a double-forked,
// setsid'd escapee, writes its PID to dir/hog, and waits.
func escapee(dir string, args string) string {
	return fmt.Sprintf(`setsid sh -c '%s %s & echo $! > %s/hog' & sleep 60`, hog, args, dir)
}

// limitReport runs contain with a limit and returns its result, its report
// and the hog's PID, which must be gone.
func limitReport(t *testing.T, o runOpts, limit []string, shell string, dir string) (result, report.Report, int) {
	t.Helper()
	path := filepath.Join(dir, "report.json")
	args := append(append([]string{"run", "--report", path}, limit...), "--", "sh", "-c", shell)
	began := time.Now()
	res := run(t, o, args...)
	t.Logf("%v: exit %d after %v", limit, res.code, time.Since(began).Round(time.Millisecond))
	pid := readPID(t, dir, "hog")
	killOnCleanup(t, pid)
	if alive(pid) {
		t.Errorf("the hog %d outlived contain", pid)
	}
	return res, readReport(t, path), pid
}

// checkHeldBy checks that the report and the exceeded line name pid
// first among what held limit kind ("memory", "pids"): the most resident
// memory (or the OOM killer's victim), or the most processes started.
func checkHeldBy(t *testing.T, res result, r report.Report, kind string, pid int) {
	t.Helper()
	l := r.Limits[kind]
	if len(l.HeldBy) == 0 || l.HeldBy[0].PID != pid {
		t.Errorf("report limits.%s.held_by = %+v, want PID %d first\n%s", kind, l.HeldBy, pid, res.stderr)
		return
	}
	h := l.HeldBy[0]
	switch kind {
	case "memory":
		if h.RSSBytes == nil || *h.RSSBytes < 32<<20 {
			t.Errorf("held_by[0] = %+v: not the memory it held", h)
		}
	case "pids":
		if h.Children < 5 {
			t.Errorf("held_by[0] = %+v: not the processes it started", h)
		}
	}
	words := map[string]string{"memory": "; held by: ", "pids": "; most processes started by: "}[kind]
	if !strings.Contains(res.stderr, words+h.Comm+fmt.Sprintf(" (PID %d, ", pid)) {
		t.Errorf("the exceeded line does not name PID %d first:\n%s", pid, res.stderr)
	}
}

func TestLimitMemory(t *testing.T) {
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			// 10 MiB every 100 ms: 100 MiB/s.
			evs := filepath.Join(dir, "events")
			res, r, hogPID := limitReport(t, m.o, []string{"--memory", "100M", "--events", evs}, escapee(dir, "mem 10 100"), dir)
			wantCode(t, res, 137)
			// The event stream's limit line names what held it too.
			if b, _ := os.ReadFile(evs); !strings.Contains(string(b), fmt.Sprintf(`"held_by":[{"pid":%d,`, hogPID)) {
				t.Errorf("the limit event does not name the hog %d first:\n%s", hogPID, b)
			}
			if !strings.Contains(res.stderr, "contain: memory limit 100 MiB exceeded: ") {
				t.Errorf("stderr says no memory limit:\n%s", res.stderr)
			}
			checkHeldBy(t, res, r, "memory", hogPID)
			l, ok := r.Limits["memory"]
			if !ok || !l.Exceeded || l.Value != 100<<20 || l.Unit != "bytes" || l.Action == "" || l.EnforcedBy == "" {
				t.Fatalf("report limits.memory = %+v", l)
			}
			if l.Peak == nil || *l.Peak < 100<<20 || *l.Peak > 300<<20 {
				t.Errorf("peak %v: not stopped within a few hundred MiB of 100 MiB", l.Peak)
			}
			if r.Ending.Signal != "SIGKILL" || r.Ending.ContainExitStatus == nil || *r.Ending.ContainExitStatus != 137 {
				t.Errorf("ending %+v", r.Ending)
			}
		})
	}
}

func TestLimitCPUTime(t *testing.T) {
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			res, r, _ := limitReport(t, m.o, []string{"--cpu-time", "1s", "-k", "2s"}, escapee(dir, "spin"), dir)
			wantCode(t, res, 124)
			if !strings.Contains(res.stderr, "contain: CPU time limit 1s exceeded: ") {
				t.Errorf("stderr:\n%s", res.stderr)
			}
			l := r.Limits["cpu_time"]
			if !l.Exceeded || l.Peak == nil || *l.Peak < 1 || !strings.Contains(l.Action, "timeout signal SIGTERM") {
				t.Errorf("report limits.cpu_time = %+v", l)
			}
			if r.Ending.TimedOut == nil || !*r.Ending.TimedOut {
				t.Errorf("not reported as timed out: %+v", r.Ending)
			}
		})
	}
}

func TestLimitPids(t *testing.T) {
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			res, r, hogPID := limitReport(t, m.o, []string{"--pids", "20", "-t", "5"}, escapee(dir, "fork"), dir)
			l := r.Limits["pids"]
			switch {
			case l.EnforcedBy == "cgroup pids.max":
				// The kernel refuses the forks, and the hog tries again
				// until the timeout: recorded, nothing killed for it.
				wantCode(t, res, 124)
				if !l.Exceeded || !strings.Contains(l.Action, "refused") {
					t.Errorf("report limits.pids = %+v", l)
				}
			default:
				wantCode(t, res, 137)
				if !strings.Contains(res.stderr, "contain: process limit 20 exceeded: ") {
					t.Errorf("stderr:\n%s", res.stderr)
				}
				// The hog starts them all: it started the most.
				checkHeldBy(t, res, r, "pids", hogPID)
				// How far past it the tree got depends on the machine's
				// load: bench/pids-overshoot.sh measures that, not a test.
				if !l.Exceeded || l.Peak == nil || *l.Peak <= 20 {
					t.Errorf("report limits.pids = %+v, peak %v", l, l.Peak)
				} else {
					t.Logf("peak %v processes", *l.Peak)
				}
			}
		})
	}
}

// TestLimitCPUs holds a spinning escapee to half a CPU for three seconds.
func TestLimitCPUs(t *testing.T) {
	// Sequential, and its modes one after another: a measured share
	// wants the CPUs it is measured against. Three trees held to half a
	// CPU each fit in two idle CPUs, but not beside two busy processes
	// (the suite must pass on a busy machine): one tree at a time gets
	// its half there too.
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			res, r, _ := limitReport(t, m.o, []string{"--cpus", "50%", "-t", "3"}, escapee(dir, "spin"), dir)
			wantCode(t, res, 124)
			l := r.Limits["cpus"]
			cpu := *r.Resources.CPUUserSeconds + *r.Resources.CPUSystemSeconds
			share := cpu / r.WallSeconds
			t.Logf("%.3f s of CPU in %.3f s: %.2f CPUs (%s), exceeded %v", cpu, r.WallSeconds, share, l.EnforcedBy, l.Exceeded)
			if l.Value != 0.5 || l.Exceeded && l.Action == "" {
				t.Errorf("report limits.cpus = %+v", l)
			}
			// Held: never much above its half, however idle the machine.
			if share > 0.7 {
				t.Errorf("the tree got %.2f CPUs, want at most about 0.5", share)
			}
			// A tree that got its half wanted more, and was held: the
			// report says so. On a busy machine (two CPU hogs beside
			// the suite) it may get less than its half from the
			// machine, never having met the limit (0.44 was seen):
			// then the report need not say it was exceeded.
			if share >= 0.47 && !l.Exceeded {
				t.Errorf("the tree got %.2f CPUs of its 0.5, and the report says it never met the limit: %+v", share, l)
			}
			// Not held far below it: a stop that outlasted its turn
			// would show here, busy machine or not.
			if share < 0.15 {
				t.Errorf("the tree got %.2f CPUs, want about 0.5", share)
			}
		})
	}
}

// TestLimitBadValues: one line, exit 125, and COMMAND never runs.
func TestLimitBadValues(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	for _, c := range []struct{ args, want string }{
		{"--memory 0", "--memory: invalid size"},
		{"--memory -5M", "--memory: invalid size"},
		{"--memory 12X", "--memory: invalid size"},
		{"--memory 1K", "too small"},
		{"--pids 0", "--pids: invalid number"},
		{"--pids -1", "--pids: invalid number"},
		{"--pids 1.5", "--pids: invalid number"},
		{"--cpu-time 0", "--cpu-time: a CPU time of 0s is too small"},
		{"--cpu-time -1", "--cpu-time: invalid duration"},
		{"--cpu-time 1ms", "too small"},
		{"--cpus 0", "--cpus: invalid CPU share"},
		{"--cpus -1", "--cpus: invalid CPU share"},
		{"--cpus abc", "--cpus: invalid CPU share"},
		{"--cpus 0.1%", "too small"},
		{"--strict-limits", "--strict-limits: no limit asked for"},
		{"-d --memory 100M", "--detach cannot be combined with --memory"},
	} {
		args := append(append([]string{"run"}, strings.Fields(c.args)...), "--", "touch", ran)
		res := run(t, runOpts{}, args...)
		if res.code != 125 || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "contain: ") || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 125 and one line with %q", c.args, res.code, res.stderr, c.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%s: COMMAND ran", c.args)
		}
	}
}

// TestLimitStrict: --strict-limits refuses, before COMMAND runs, a limit
// the kernel cannot hold here; where it can, the run goes on and -v says
// the kernel holds it.
func TestLimitStrict(t *testing.T) {
	modes := []runOpts{{}, {env: []string{trackingOnly}}}
	if os.Geteuid() == 0 {
		modes = append(modes, runOpts{asNobody: true})
	}
	for _, o := range modes {
		dir := sharedDir(t)
		ran := filepath.Join(dir, "ran")
		res := run(t, o, "run", "-v", "--strict-limits", "--memory", "100M", "--", "touch", ran)
		_, err := os.Stat(ran)
		switch res.code {
		case 125:
			if !strings.Contains(res.stderr, "contain: refusing to run: --memory 100 MiB cannot be enforced by the kernel here") {
				t.Errorf("%+v: stderr:\n%s", o, res.stderr)
			}
			if err == nil {
				t.Errorf("%+v: refused, yet COMMAND ran", o)
			}
		case 0:
			if !strings.Contains(res.stderr, "--memory 100 MiB: enforced by cgroup memory.max") || err != nil {
				t.Errorf("%+v: accepted, but not held by the kernel:\n%s", o, res.stderr)
			}
		default:
			t.Errorf("%+v: exit %d\n%s", o, res.code, res.stderr)
		}
	}
}

// TestLimitReportVerbose: -v names what enforces each limit and, in its
// closing line, the limit that was hit; a run within its limits reports
// them not exceeded.
func TestLimitReportVerbose(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	path := filepath.Join(dir, "r.json")
	res := run(t, runOpts{}, "run", "-v", "--report", path, "--memory", "1G", "--pids", "100", "--cpu-time", "10s", "--cpus", "2", "--", "sh", "-c", "sleep 0.3")
	wantCode(t, res, 0)
	r := readReport(t, path)
	if len(r.Limits) != 4 {
		t.Fatalf("limits %+v", r.Limits)
	}
	for k, l := range r.Limits {
		if l.Exceeded || l.EnforcedBy == "" || !strings.Contains(res.stderr, "enforced by "+l.EnforcedBy) {
			t.Errorf("%s: %+v\n%s", k, l, res.stderr)
		}
	}
	res = run(t, runOpts{}, "run", "-v", "--memory", "64M", "--", hog, "mem", "16", "20")
	wantCode(t, res, 137)
	if !strings.Contains(res.stderr, "done: killed by SIGKILL (memory limit 64 MiB exceeded: ") {
		t.Errorf("the summary does not name the limit:\n%s", res.stderr)
	}
	res = run(t, runOpts{}, "run", "--report", path, "--", "true")
	wantCode(t, res, 0)
	if r := readReport(t, path); r.Limits != nil || r.Version != report.Version {
		t.Errorf("no limits asked, yet %+v (version %d)", r.Limits, r.Version)
	}
}

// TestLimitKernelMemory: where cgroup v2 delegates the memory controller
// (a unified layout as root, or systemd's user@UID.service), memory.max
// holds the tree, the kernel's OOM killer ends it, and contain tells it
// from an OOM kill for a limit above the group.
func TestLimitKernelMemory(t *testing.T) {
	requireRoot(t, "enabling controllers in cgroup v2")
	own := ownCgroupDir()
	avail, _ := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if !strings.Contains(" "+string(avail)+" ", " memory ") {
		t.Skipf("no memory controller in cgroup v2 at %s (this hybrid layout keeps it in v1; the test runs on a unified layout, such as the device machine's)", own)
	}
	dir := sharedDir(t)
	res, r, _ := limitReport(t, runOpts{}, []string{"-v", "--memory", "64M"}, escapee(dir, "mem 8 20"), dir)
	wantCode(t, res, 137)
	l := r.Limits["memory"]
	if l.EnforcedBy != "cgroup memory.max" || !l.Exceeded || !strings.Contains(l.Action, "OOM killer") {
		t.Errorf("report limits.memory = %+v\n%s", l, res.stderr)
	}
	if len(l.HeldBy) == 0 || l.HeldBy[0].How != "ended by the kernel's OOM killer" || l.HeldBy[0].Comm != "hog" {
		t.Errorf("report limits.memory.held_by = %+v: not the OOM killer's victim", l.HeldBy)
	}
	if entries, _ := filepath.Glob(filepath.Join(own, cgroup.Prefix+"*"+cgroup.SelfSuffix)); len(entries) > 0 {
		t.Errorf("leaf left behind: %v", entries)
	}
}

// TestLimitRealDaemon: redis-server daemonizes (a double fork out of
// COMMAND's session, its title written over its environment) and is then
// filled past the memory limit: the tree, redis included, is killed.
func TestLimitRealDaemon(t *testing.T) {
	testtool.Need(t, "redis-server", "redis-server")
	testtool.Need(t, "redis-cli", "redis-tools")
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			script := fmt.Sprintf(`D=%s
redis-server --daemonize yes --port 0 --unixsocket $D/redis.sock --dir $D --logfile /dev/null --save '' --enable-debug-command yes --pidfile $D/redis.pid
i=0; while [ ! -s $D/redis.pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
cp $D/redis.pid $D/hog
redis-cli -s $D/redis.sock debug populate 3000000 >/dev/null
sleep 60`, dir)
			res, r, redis := limitReport(t, m.o, []string{"--memory", "64M"}, script, dir)
			wantCode(t, res, 137)
			checkHeldBy(t, res, r, "memory", redis)
			if l := r.Limits["memory"]; !l.Exceeded || !strings.Contains(res.stderr, "contain: memory limit 64 MiB exceeded") {
				t.Errorf("limits.memory %+v\n%s", l, res.stderr)
			}
		})
	}
}

// TestLimitLeafReaped: after a crash, the cgroup contain-PID.self that
// contain moved itself into (to enable controllers) is left empty beside
// its group; contain reap --session removes it with the group.
func TestLimitLeafReaped(t *testing.T) {
	requireRoot(t, "making cgroups")
	own := ownCgroupDir()
	if own == "" {
		t.Skip("no cgroup v2")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	pid := gone.Process.Pid // ended: a dead contain's PID
	leaf := filepath.Join(own, fmt.Sprintf("%s%d%s", cgroup.Prefix, pid, cgroup.SelfSuffix))
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(leaf) })
	res := run(t, runOpts{}, "reap", "--session", fmt.Sprintf("CONTAIN:%d", pid))
	wantCode(t, res, 0)
	if _, err := os.Stat(leaf); err == nil {
		t.Errorf("reap left %s\n%s%s", leaf, res.stdout, res.stderr)
	}
}

// TestLimitsKeepTheRunsCgroup: where contain, as root, makes a cgroup but
// cannot enable the limits' controllers for it (this machine's hybrid
// layout), the limits are sampled and the cgroup still holds the tree:
// asking systemd for a scope, which fails where there is none, must not
// cost the run its cgroup (it did: the run fell back to the shim and
// scans).
func TestLimitsKeepTheRunsCgroup(t *testing.T) {
	t.Parallel()
	requireRoot(t, "only root makes a cgroup on this machine")
	if cgroup.UsualMount() == "" {
		t.Skip("no cgroup v2 mount here")
	}
	dir := sharedDir(t)
	path := filepath.Join(dir, "report.json")
	res := run(t, runOpts{}, "run", "-v", "--report", path, "--memory", "100M", "--", "true")
	wantCode(t, res, 0)
	r := readReport(t, path)
	if !slices.ContainsFunc(r.Containment, func(c string) bool { return strings.HasPrefix(c, "cgroup ") }) {
		t.Errorf("containment %q: no cgroup\n%s", r.Containment, res.stderr)
	}
	// Nor is systemd asked on a hybrid layout, where no cgroup has the
	// controller: the line says why in one.
	if slices.Contains(cgroup.Missing([]string{cgroup.MemoryController}), cgroup.MemoryController) &&
		!strings.Contains(res.stderr, "and no systemd scope: cgroup v2 has no memory controller here (contain enforces it by sampling)") {
		t.Errorf("-v does not say why no scope was asked for:\n%s", res.stderr)
	}
}
