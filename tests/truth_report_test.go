//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// endedEntry is one entry of the report's ended_by_contain, read on its
// own (not through package report) so that the test reads a report of
// any version the same way.
type endedEntry struct {
	PID     int      `json:"pid"`
	Comm    string   `json:"comm"`
	Argv    []string `json:"argv"`
	Command bool     `json:"command"`
	Phase   string   `json:"phase"`
	Signal  string   `json:"signal"`
	EndedBy string   `json:"ended_by"`
}

// truthReport is what these tests read of a report.
type truthReport struct {
	WrittenBy string `json:"written_by"`
	Leftovers []struct {
		PID     int    `json:"pid"`
		Comm    string `json:"comm"`
		EndedBy string `json:"ended_by"`
	} `json:"leftovers"`
	Ended *[]endedEntry `json:"ended_by_contain"`
}

func readTruth(t *testing.T, path string) truthReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var r truthReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if r.Ended == nil {
		t.Fatalf("the report has no ended_by_contain:\n%s", b)
	}
	return r
}

// names lists the entries as "PID comm phase signal ended_by", sorted,
// for messages.
func names(es []endedEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%d %s %q %s %q", e.PID, e.Comm, e.Phase, e.Signal, e.EndedBy))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// TestTruthTimeoutEnded: on a timeout the report lists every process the
// timeout signal ended — COMMAND (sh) and its three background and
// foreground sleeps — by name, with the phase and the signal, although
// none was left when COMMAND ended ("leftovers": [], which said nothing of
// them before). In each mode: cgroup, nobody (the shim), tracking.
func TestTruthTimeoutEnded(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			path := filepath.Join(dir, "report.json")
			script := fmt.Sprintf(`D=%s; sleep 30 & echo $! > $D/a; sleep 31 & echo $! > $D/b; echo $$ > $D/sh; sleep 40`, dir)
			res := run(t, m.o, "run", "-t", "1.5", "--report", path, "--", "sh", "-c", script)
			wantCode(t, res, 124)
			a, b, sh := readPID(t, dir, "a"), readPID(t, dir, "b"), readPID(t, dir, "sh")
			killOnCleanup(t, a)
			killOnCleanup(t, b)
			r := readTruth(t, path)
			byPID := map[int]endedEntry{}
			sleeps := 0
			for _, e := range *r.Ended {
				byPID[e.PID] = e
				if e.Comm == "sleep" {
					sleeps++
				}
				if e.Phase != "timeout" || e.Signal != "SIGTERM" || !strings.HasPrefix(e.EndedBy, "SIGTERM") {
					t.Errorf("%d (%s): phase %q, signal %q, ended by %q; want the timeout's SIGTERM", e.PID, e.Comm, e.Phase, e.Signal, e.EndedBy)
				}
			}
			if e, ok := byPID[sh]; !ok || e.Comm != "sh" || !e.Command || len(e.Argv) != 3 || e.Argv[2] != script {
				t.Errorf("COMMAND (sh %d) is not listed as COMMAND, with its name and command line: %s", sh, names(*r.Ended))
			}
			for _, pid := range []int{a, b} {
				if e, ok := byPID[pid]; !ok || e.Comm != "sleep" || e.Command || len(e.Argv) != 2 || e.Argv[0] != "sleep" {
					t.Errorf("background sleep %d is not listed by name: %s", pid, names(*r.Ended))
				}
				if alive(pid) {
					t.Errorf("background sleep %d still runs", pid)
				}
			}
			if sleeps != 3 || len(*r.Ended) != 4 {
				t.Errorf("want sh and 3 sleeps, got %s", names(*r.Ended))
			}
			// The timeout's SIGTERM went to all at once: a sleep that the
			// kernel ended a moment after sh was alive when COMMAND ended,
			// a leftover, but one the timeout's signal ended, not the
			// closing of the group.
			for _, l := range r.Leftovers {
				if l.EndedBy != "SIGTERM" || (l.PID != a && l.PID != b && byPID[l.PID].Comm != "sleep") {
					t.Errorf("leftover %+v: want none but the sleeps, ended by the timeout's SIGTERM", l)
				}
			}
		})
	}
}

// TestTruthCloseEnded: what contain ends after COMMAND ended is listed
// with the phase "after COMMAND ended", and the leftovers carry their
// name; -v names each process it signals and reaps (the README tour's
// command).
func TestTruthCloseEnded(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	path := filepath.Join(dir, "report.json")
	// COMMAND ends once both run sleep: until its exec each is sh, and
	// the close (fast) would name it so.
	script := fmt.Sprintf(`sleep 300 & echo $! > %[1]s/bg; setsid sh -c 'echo $$ > %[1]s/escapee; exec sleep 301' & while [ ! -s %[1]s/escapee ]; do sleep 0.01; done; for p in $(cat %[1]s/bg %[1]s/escapee); do while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done; done; echo started`, dir)
	res := run(t, runOpts{}, "run", "-v", "--report", path, "--", "sh", "-c", script)
	wantCode(t, res, 0)
	bg, esc := readPID(t, dir, "bg"), readPID(t, dir, "escapee")
	killOnCleanup(t, bg)
	killOnCleanup(t, esc)
	r := readTruth(t, path)
	left := map[int]string{}
	for _, l := range r.Leftovers {
		left[l.PID] = l.Comm
	}
	ended := map[int]endedEntry{}
	for _, e := range *r.Ended {
		ended[e.PID] = e
	}
	for _, pid := range []int{bg, esc} {
		if left[pid] != "sleep" {
			t.Errorf("leftover %d: comm %q, want sleep (leftovers %+v)", pid, left[pid], r.Leftovers)
		}
		e, ok := ended[pid]
		if !ok || e.Comm != "sleep" || e.Phase != "after COMMAND ended" || e.Signal != "SIGTERM" || e.EndedBy != "SIGTERM" || e.Command {
			t.Errorf("%d is not listed as ended after COMMAND by SIGTERM: %s", pid, names(*r.Ended))
		}
		for _, line := range []string{fmt.Sprintf("contain: sending SIGTERM to leftover %d (sleep)\n", pid), fmt.Sprintf("contain: reaped adopted process %d (sleep)\n", pid)} {
			if !strings.Contains(res.stderr, line) {
				t.Errorf("-v lacks %q:\n%s", line, res.stderr)
			}
		}
	}
	if len(*r.Ended) != 2 {
		t.Errorf("want the 2 sleeps, got %s", names(*r.Ended))
	}
}

// TestTruthVerboseNames: -v names the process wherever it gives a PID:
// each process the timeout signal goes to, and each one contain reaps.
// Before, it said "reaped adopted process 28110" and nothing of the
// timeout signal's processes.
func TestTruthVerboseNames(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	// The sleeps are orphans from the start (a subshell started each):
	// sh, which reaps its own children as it waits, cannot reap them
	// before contain does.
	script := fmt.Sprintf(`D=%s; (sleep 30 & echo $! > $D/a); (sleep 31 & echo $! > $D/b); echo $$ > $D/sh; sleep 40`, dir)
	res := run(t, runOpts{}, "run", "-v", "-t", "1.5", "--", "sh", "-c", script)
	wantCode(t, res, 124)
	a, b, sh := readPID(t, dir, "a"), readPID(t, dir, "b"), readPID(t, dir, "sh")
	want := []string{
		fmt.Sprintf("contain: sending SIGTERM to %d (sh)\n", sh),
		fmt.Sprintf("contain: sending SIGTERM to %d (sleep)\n", a),
		fmt.Sprintf("contain: sending SIGTERM to %d (sleep)\n", b),
		fmt.Sprintf("contain: reaped adopted process %d (sleep)\n", a),
		fmt.Sprintf("contain: reaped adopted process %d (sleep)\n", b),
	}
	for _, line := range want {
		if !strings.Contains(res.stderr, line) {
			t.Errorf("-v lacks %q:\n%s", line, res.stderr)
		}
	}
	if regexp.MustCompile(`(?m)^contain: reaped adopted process \d+$`).MatchString(res.stderr) {
		t.Errorf("a reaped process without its name:\n%s", res.stderr)
	}
	// The sleeps die of the same SIGTERM as sh: those still alive as sh's
	// end was read are leftovers, ended by SIGTERM, and which are is a
	// race under load.
	if !regexp.MustCompile(`(?m)^contain: done: killed by SIGTERM \(timed out\), .*, (no leftovers|\d leftovers? \(\d ended by SIGTERM\)), the timeout ended 4 processes \(sh, 3 sleep\)$`).MatchString(res.stderr) {
		t.Errorf("the summary does not say what the timeout ended:\n%s", res.stderr)
	}
}

// TestTruthCrashEnded: after contain is killed, the guard's (or the
// shim's) report lists what it ended, by name, in the phase "crash".
func TestTruthCrashEnded(t *testing.T) {
	t.Parallel()
	modes := []runOpts{{}}
	if os.Geteuid() == 0 {
		modes = append(modes, runOpts{asNobody: true})
	}
	for _, o := range modes {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			path := filepath.Join(dir, "report.json")
			script := fmt.Sprintf(`setsid sh -c 'echo $$ > %[1]s/escapee; exec sleep 300' & sleep 300 & echo $! > %[1]s/bg; wait`, dir)
			cmd, stderr, wait := startContainLive(t, o, "run", "-v", "--report", path, "--", "sh", "-c", script)
			waitFor(t, "the sleeps", 10*time.Second, func() bool {
				a, _ := os.ReadFile(filepath.Join(dir, "escapee"))
				b, _ := os.ReadFile(filepath.Join(dir, "bg"))
				return len(a) > 0 && len(b) > 0
			})
			esc, bg := readPID(t, dir, "escapee"), readPID(t, dir, "bg")
			killOnCleanup(t, esc)
			killOnCleanup(t, bg)
			guard := guardPID(t, stderr)
			killOnCleanup(t, guard)
			time.Sleep(300 * time.Millisecond) // the scans see the escapee
			cmd.Process.Signal(syscall.SIGKILL)
			wait()
			waitFor(t, "the guard to write the report", 5*time.Second, func() bool { return !alive(guard) })
			r := readTruth(t, path)
			ended := map[int]endedEntry{}
			for _, e := range *r.Ended {
				ended[e.PID] = e
			}
			for _, pid := range []int{esc, bg} {
				e, ok := ended[pid]
				if !ok || e.Comm != "sleep" || e.Phase != "crash" || e.Signal == "" || e.EndedBy == "" || e.EndedBy == "still running" {
					t.Errorf("%d is not listed as ended by the %s after the crash: %s", pid, r.WrittenBy, names(*r.Ended))
				}
			}
		})
	}
}
