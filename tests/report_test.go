//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"

	"github.com/contain-cli/contain/report"
)

// reportModes: root with its cgroup, nobody without (rusage of what
// contain reaps as subreaper), and the portable core alone.
func reportModes(t *testing.T) []struct {
	name string
	o    runOpts
} {
	modes := []struct {
		name string
		o    runOpts
	}{{"self", runOpts{}}}
	if os.Geteuid() == 0 {
		modes = append(modes, struct {
			name string
			o    runOpts
		}{"nobody", runOpts{asNobody: true}})
	}
	return append(modes, struct {
		name string
		o    runOpts
	}{"tracking", runOpts{env: []string{trackingOnly}}})
}

// burn is a fixed amount of shell work: about a quarter of a second of CPU
// here; with the 100 MB that perl fills, the escapee's work is about four
// times COMMAND's own (its polling), so a report that missed the escapee
// would fall well short of the work measured alone.
const burn = `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`

// TestReportChargesEscapees: a grandchild that setsid'd and was orphaned
// burns CPU and allocates 100 MB; the report charges the group for both
// (from the cgroup, or from the rusage of what contain reaped as
// subreaper), and names the source.
func TestReportChargesEscapees(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "perl", "perl-base")
	// The work alone, measured the same way, is the yardstick: next to
	// each run, before and after it, the smaller of the two. CPU time of
	// the same work grows with the machine's load (shared caches, other
	// threads on the core): a yardstick taken once, as every parallel
	// test starts, stood 40% above a run measured later on a quieter
	// machine (0.675 s charged against 0.976 s, the escapee counted).
	alone := func() float64 {
		c := exec.Command("sh", "-c", burn+`; perl -e '$x = q(a) x 100_000_000'`)
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		return (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
	}
	modes := append(reportModes(t), struct {
		name string
		o    runOpts
	}{"no shim", runOpts{env: []string{trackingOnly + ",shim"}}})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			path := filepath.Join(dir, "report.json")
			script := fmt.Sprintf(`D=%s
sh -c 'setsid sh -c '"'"'%s; perl -e "\$x = q(a) x 100_000_000"; touch '$D'/done'"'"' &'
while [ ! -f $D/done ]; do sleep 0.02; done
sleep 0.2`, dir, burn)
			before := alone()
			res := run(t, m.o, "run", "--report", path, "--", "sh", "-c", script)
			wantCode(t, res, 0)
			base := min(before, alone())
			r := readReport(t, path)
			rs := r.Resources
			if rs.CPUUserSeconds == nil || rs.CPUSystemSeconds == nil {
				t.Fatalf("no CPU figures: %+v", rs)
			}
			cpu := *rs.CPUUserSeconds + *rs.CPUSystemSeconds
			src := rs.Sources["cpu"]
			switch m.name {
			case "no shim":
				// The escapee is re-parented to PID 1: its rusage is lost,
				// and the source says so. (With the shim, the default
				// without a cgroup, the shim reaps it.)
				if !strings.Contains(src, "not counted") {
					t.Errorf("cpu source %q does not say what it misses", src)
				}
			default:
				if cpu < 0.7*base {
					t.Errorf("CPU %.3fs, want at least 70%% of the escapee's %.3fs (source %q)", cpu, base, src)
				}
				var mem uint64
				if rs.PeakMemoryBytes != nil {
					mem = *rs.PeakMemoryBytes
				} else if rs.MaxProcessRSSBytes != nil {
					mem = *rs.MaxProcessRSSBytes
				}
				if mem < 100_000_000 {
					t.Errorf("memory %d bytes, want at least the escapee's 100 MB; %+v", mem, rs)
				}
			}
			wantSrc := "rusage"
			if m.name == "self" && os.Geteuid() == 0 {
				wantSrc = "cgroup cpu.stat"
			}
			if !strings.Contains(src, wantSrc) {
				t.Errorf("cpu source %q, want %q", src, wantSrc)
			}
			for _, f := range []string{"peak_memory_bytes", "io_read_bytes"} {
				if _, known := rs.Sources[f]; !known && rs.Absent[f] == "" {
					t.Errorf("%s neither given nor absent with a reason: %+v", f, rs)
				}
			}
			if rs.PeakProcesses == nil && rs.Absent["peak_processes"] == "" {
				t.Errorf("peak_processes neither given nor absent with a reason")
			}
			t.Logf("%s: CPU %.3fs (escapee alone %.3fs) from %s", m.name, cpu, base, src)
		})
	}
}

// TestReportLeftovers: each process alive when COMMAND ended is reported
// with how it was found, whether it left the group and session, whether it
// held contain's stdout, and what ended it when.
func TestReportLeftovers(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			path := filepath.Join(dir, "report.json")
			script := escapeeTree(dir, "quiet", "holder", "stubborn") + "sleep 0.3\nexit 3\n"
			begin := time.Now()
			res := run(t, m.o, "run", "-v", "-g", "0.4", "--report", path, "--", "sh", "-c", script)
			wantCode(t, res, 3)
			pids := map[string]int{}
			for _, k := range []string{"quiet", "holder", "stubborn"} {
				pids[k] = readPID(t, dir, k)
				killOnCleanup(t, pids[k])
			}
			r := readReport(t, path)
			if r.Ending.ExitCode == nil || *r.Ending.ExitCode != 3 || r.Ending.ContainExitStatus == nil || *r.Ending.ContainExitStatus != 3 {
				t.Errorf("ending %+v, want exit 3 and contain's status 3", r.Ending)
			}
			if r.ContainPID != res.pid || r.Tag != fmt.Sprintf("CONTAIN:%d", res.pid) || r.WrittenBy != "contain" {
				t.Errorf("report of contain %d, tag %q, by %q", r.ContainPID, r.Tag, r.WrittenBy)
			}
			if r.Started.Before(begin) || !r.Ended.After(r.Started.Time) || r.WallSeconds < 0.3 {
				t.Errorf("started %v, ended %v, wall %v", r.Started, r.Ended, r.WallSeconds)
			}
			byPID := map[int]report.Leftover{}
			for _, l := range r.Leftovers {
				byPID[l.PID] = l
			}
			for kind, pid := range pids {
				l, ok := byPID[pid]
				if !ok {
					t.Errorf("%s %d is not among the leftovers: %+v", kind, pid, r.Leftovers)
					continue
				}
				if l.FoundBy == "" || len(l.Argv) == 0 || l.Argv[0] != "sleep" || l.Started == nil || l.EndedAfterSeconds == nil {
					t.Errorf("%s: %+v", kind, l)
				}
				wantLeft := kind == "stubborn"
				if l.LeftSession == nil || *l.LeftSession != wantLeft || l.LeftProcessGroup == nil || *l.LeftProcessGroup != wantLeft {
					t.Errorf("%s: left group %v, session %v; want %v", kind, l.LeftProcessGroup, l.LeftSession, wantLeft)
				}
				if l.HeldStdout == nil || *l.HeldStdout != (kind == "holder") {
					t.Errorf("%s: held stdout %v", kind, l.HeldStdout)
				}
				switch kind {
				case "stubborn":
					if l.EndedBy != "SIGKILL" || *l.EndedAfterSeconds < 0.4 {
						t.Errorf("stubborn: ended by %q after %vs; want SIGKILL after the 0.4 s grace", l.EndedBy, *l.EndedAfterSeconds)
					}
				default:
					// SIGTERM ended it: the grace's SIGKILL was not needed
					// (how soon is the machine's business, not a promise).
					if l.EndedBy != "SIGTERM" {
						t.Errorf("%s: ended by %q after %vs; want SIGTERM", kind, l.EndedBy, *l.EndedAfterSeconds)
					}
				}
			}
			if !strings.Contains(res.stderr, "contain: done: exit 3,") || !strings.Contains(res.stderr, "3 leftovers (") {
				t.Errorf("-v does not end with the summary:\n%s", res.stderr)
			}
		})
	}
}

// TestReportEndings: how it ended, for a timeout, a kill after the
// timeout, and a stop request.
func TestReportEndings(t *testing.T) {
	t.Parallel()
	type want struct {
		status      int
		timedOut    bool
		killedAfter bool
		told        string
		signal      string
	}
	cases := []struct {
		name string
		args []string
		stop bool // send SIGTERM to contain
		want want
	}{
		{"timeout", []string{"-t", "0.2", "--", "sleep", "10"}, false, want{124, true, false, "", "SIGTERM"}},
		{"kill-after", []string{"-t", "0.2", "-k", "0.2", "--", "sh", "-c", `trap "" TERM; sleep 10`}, false, want{137, true, true, "", "SIGKILL"}},
		{"told to stop", []string{"--", "sleep", "10"}, true, want{143, false, false, "SIGTERM", "SIGTERM"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.json")
			cmd, wait := startContain(t, runOpts{}, append([]string{"run", "--report", path}, c.args...)...)
			if c.stop {
				time.Sleep(300 * time.Millisecond)
				cmd.Process.Signal(syscall.SIGTERM)
			}
			res := wait()
			if res.code != c.want.status {
				t.Errorf("status %d, want %d", res.code, c.want.status)
			}
			e := readReport(t, path).Ending
			if e.TimedOut == nil || *e.TimedOut != c.want.timedOut || e.KilledAfterTimeout == nil || *e.KilledAfterTimeout != c.want.killedAfter ||
				e.ToldToStop != c.want.told || e.Signal != c.want.signal || e.ContainExitStatus == nil || *e.ContainExitStatus != c.want.status {
				b, _ := json.Marshal(e)
				t.Errorf("ending %s, want %+v", b, c.want)
			}
		})
	}
}

// TestReportAfterCrash: contain killed with SIGKILL; the guard writes the
// report, with what only contain knew absent and why.
func TestReportAfterCrash(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	path := filepath.Join(dir, "report.json")
	script := fmt.Sprintf(`setsid sh -c 'echo $$ > %s/escapee; exec sleep 300' & sleep 300`, dir)
	cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "-v", "--report", path, "--", "sh", "-c", script)
	waitFor(t, "the escapee", 10*time.Second, func() bool { b, _ := os.ReadFile(filepath.Join(dir, "escapee")); return len(b) > 0 })
	escapee := readPID(t, dir, "escapee")
	killOnCleanup(t, escapee)
	guard := guardPID(t, stderr)
	killOnCleanup(t, guard)
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	wait()
	waitFor(t, "the guard to write the report", 3*time.Second, func() bool { return !alive(guard) })
	r := readReport(t, path)
	if r.WrittenBy != "guard" && r.WrittenBy != "shim" || r.ContainPID != cmd.Process.Pid {
		t.Errorf("written by %q for contain %d", r.WrittenBy, r.ContainPID)
	}
	if r.Ending.ExitCode != nil || r.Ending.Absent["exit_code"] == "" || r.Ending.Absent["contain_exit_status"] == "" {
		t.Errorf("ending %+v: COMMAND's status must be absent, with the reason", r.Ending)
	}
	// As root the cgroup accounted for the whole session: the guard reads
	// it before removing the cgroup.
	rs := r.Resources
	switch {
	case os.Geteuid() == 0 && (rs.CPUUserSeconds == nil || rs.Sources["cpu"] != "cgroup cpu.stat"):
		t.Errorf("as root the guard's report has no CPU from the cgroup: %+v", rs)
	case os.Geteuid() != 0 && rs.CPUUserSeconds == nil && rs.Absent["cpu_user_seconds"] == "":
		t.Errorf("CPU neither given nor absent with a reason: %+v", rs)
	}
	found := false
	for _, l := range r.Leftovers {
		if l.PID == escapee {
			found = true
			// The guard is no parent of the escapee: it knows what it
			// sent, not how the escapee then ended.
			if !strings.HasPrefix(l.EndedBy, "SIGTERM") && !strings.HasPrefix(l.EndedBy, "SIGKILL") {
				t.Errorf("escapee ended by %q", l.EndedBy)
			}
		}
	}
	if !found {
		t.Errorf("the escapee %d is not among the leftovers: %+v", escapee, r.Leftovers)
	}
}

// TestReportPath: a report in a missing directory is refused before
// COMMAND runs (125); one that cannot be written at the end is one line on
// stderr and changes nothing else; "-" is stderr; CONTAIN_REPORT sets it.
func TestReportPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	res := run(t, runOpts{}, "run", "--report", filepath.Join(dir, "no", "report.json"), "--", "touch", marker)
	wantCode(t, res, 125)
	wantOneErrorLine(t, res.stderr, "contain: run: --report: ")
	if _, err := os.Stat(marker); err == nil {
		t.Error("COMMAND ran although the report's directory is missing")
	}

	gone := filepath.Join(dir, "gone")
	os.Mkdir(gone, 0o755)
	res = run(t, runOpts{}, "run", "--report", filepath.Join(gone, "r.json"), "--", "sh", "-c", "rmdir "+gone+"; exit 7")
	wantCode(t, res, 7)
	wantOneErrorLine(t, res.stderr, "contain: cannot write the report: ")

	res = run(t, runOpts{env: []string{"CONTAIN_REPORT=-"}}, "run", "--", "true")
	wantCode(t, res, 0)
	var r report.Report
	if err := json.Unmarshal([]byte(res.stderr), &r); err != nil || r.Version != report.Version || r.Ending.ExitCode == nil {
		t.Errorf("CONTAIN_REPORT=- did not put the report on stderr: %v\n%s", err, res.stderr)
	}
}
