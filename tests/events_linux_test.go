//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/report"
)

// TestEventsEveryKind: every kind of line contain run --events has
// (but dropped, which needs a reader that stops: internal/events' tests)
// is written by a real run, as root (cgroup), as nobody (no cgroup: the
// shim and the scans) and with tracking alone, each line a JSON object of
// version 1:
//
//   - escapees: a setsid escapee and a double-forked one are said as
//     joined while COMMAND runs (read from the FILE as it is written,
//     before anything ends the run), then SIGALRM times the run out:
//     signal lines (why timeout) and the end (timeout, 124);
//   - a leftover: a background sleep COMMAND left is sent SIGTERM (a
//     signal line, after COMMAND ended) and its end is a leftover line;
//     the end says exited 0, one leftover;
//   - a daemon: contain run -d inside --allow-daemons is a daemon line;
//   - a limit: --pids exceeded by a forking escapee is a limit line.
func TestEventsEveryKind(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			seen := map[string]bool{}
			saw := func(lines []evLine) {
				for _, l := range lines {
					seen[l.Kind] = true
				}
			}
			t.Run("escapees", func(t *testing.T) { saw(eventsEscapees(t, m.o)) })
			t.Run("leftover", func(t *testing.T) { saw(eventsLeftover(t, m.o)) })
			t.Run("daemon", func(t *testing.T) { saw(eventsDaemon(t, m.o)) })
			t.Run("limit", func(t *testing.T) { saw(eventsLimit(t, m.o)) })
			for _, k := range evKinds {
				if k != "dropped" && !seen[k] {
					t.Errorf("no %s line in any of the runs", k)
				}
			}
		})
	}
}

// eventsFile is where a test's run writes its events.
func eventsFile(dir string) string { return filepath.Join(dir, "events.jsonl") }

func eventsEscapees(t *testing.T, o runOpts) []evLine {
	dir := sharedDir(t)
	path := eventsFile(dir)
	script := fmt.Sprintf(`setsid sleep 300 & echo $! > %[1]s/setsid; (sleep 301 & echo $! > %[1]s/double); exec sleep 302`, dir)
	cmd, _, wait := startContainLive(t, o, "run", "-t", "5m", "-g", "5s", "--events", path, "--", "sh", "-c", script)
	setsid, double := readPID(t, dir, "setsid"), readPID(t, dir, "double")
	killOnCleanup(t, setsid)
	killOnCleanup(t, double)
	// Read as tail -f would, while the run goes on: nothing ends it
	// before the test does.
	var lines []evLine
	joined := func(pid int) (evLine, bool) {
		return findEvent(lines, func(l evLine) bool { return l.Kind == "joined" && l.PID == pid })
	}
	waitFor(t, "the joined lines of both escapees in "+path, 30*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		lines = parseEvents(t, b)
		_, a := joined(setsid)
		_, b2 := joined(double)
		return a && b2
	})
	if lines[0].Kind != "started" || lines[0].PID <= 0 || len(lines[0].Layers) == 0 || !slices.Equal(lines[0].Command, []string{"sh", "-c", script}) {
		t.Errorf("the first line is %+v, want COMMAND started, with its layers", lines[0])
	}
	// Its name as first seen: setsid's, before it executes sleep.
	if j, _ := joined(setsid); !j.LeftProcessGroup || j.LeftSession == nil || !*j.LeftSession || j.FoundBy == "" || j.Comm != "sleep" && j.Comm != "setsid" {
		t.Errorf("the setsid escapee %d: %+v", setsid, j)
	}
	if j, _ := joined(double); !j.Reparented || j.LeftProcessGroup || j.FoundBy == "" || j.Comm != "sleep" && j.Comm != "sh" {
		t.Errorf("the double-forked escapee %d: %+v", double, j)
	}
	if err := cmd.Process.Signal(syscall.SIGALRM); err != nil {
		t.Fatal(err)
	}
	res := wait()
	wantCode(t, res, 124)
	lines = readEvents(t, path)
	if lines[0].Tag != fmt.Sprintf("CONTAIN:%d", res.pid) || lines[0].ContainPID != res.pid {
		t.Errorf("tag %q, contain_pid %d; contain was %d", lines[0].Tag, lines[0].ContainPID, res.pid)
	}
	for _, pid := range []int{setsid, double} {
		if _, ok := findEvent(lines, func(l evLine) bool {
			return l.Kind == "signal" && l.PID == pid && l.Signal == "SIGTERM" && l.Why == "timeout" && l.To == "process"
		}); !ok {
			t.Errorf("no SIGTERM line (timeout) for %d: %+v", pid, lines)
		}
		if alive(pid) {
			t.Errorf("escapee %d outlived the run", pid)
		}
	}
	if e := lines[len(lines)-1]; *e.Status != 124 || e.Why != "timeout" || !e.TimedOut || e.Signal != "SIGTERM" {
		t.Errorf("the end: %+v", e)
	}
	return lines
}

func eventsLeftover(t *testing.T, o runOpts) []evLine {
	dir := sharedDir(t)
	path := eventsFile(dir)
	res := run(t, o, "run", "-q", "--events", path, "--", "sh", "-c", fmt.Sprintf(`sleep 300 & echo $! > %s/left`, dir))
	wantCode(t, res, 0)
	left := readPID(t, dir, "left")
	killOnCleanup(t, left)
	lines := readEvents(t, path)
	sig, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "signal" && l.PID == left })
	if !ok || sig.Signal != "SIGTERM" || sig.Why != "after COMMAND ended" || sig.Comm != "sleep" && sig.Comm != "sh" {
		t.Errorf("the leftover %d's signal line: %+v (found %v)", left, sig, ok)
	}
	// Its name as contain first saw it: sh's, on a busy machine, where the
	// child had not yet executed sleep when COMMAND ended.
	l, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "leftover" && l.PID == left })
	if !ok || !strings.HasPrefix(l.EndedBy, "SIGTERM") || l.Comm != "sleep" && l.Comm != "sh" {
		t.Errorf("the leftover %d's line: %+v (found %v)", left, l, ok)
	}
	if slices.IndexFunc(lines, func(l evLine) bool { return l.Kind == "signal" && l.PID == left }) >
		slices.IndexFunc(lines, func(l evLine) bool { return l.Kind == "leftover" && l.PID == left }) {
		t.Errorf("the leftover line comes before its signal: %+v", lines)
	}
	if e := lines[len(lines)-1]; *e.Status != 0 || e.ExitCode == nil || *e.ExitCode != 0 || e.Why != "exited" || *e.Leftovers != 1 {
		t.Errorf("the end: %+v", e)
	}
	return lines
}

func eventsDaemon(t *testing.T, o runOpts) []evLine {
	dir := sharedDir(t)
	path := eventsFile(dir)
	res := run(t, o, "run", "--allow-daemons", "--events", path, "--", "sh", "-c", daemonScript(dir))
	wantCode(t, res, 0)
	daemon, escapee := readPID(t, dir, "daemon"), readPID(t, dir, "escapee")
	killOnCleanup(t, daemon)
	killOnCleanup(t, escapee)
	lines := readEvents(t, path)
	if d, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "daemon" && l.PID == daemon }); !ok || d.Why == "" {
		t.Errorf("no daemon line for %d: %+v", daemon, lines)
	}
	if _, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "daemon" && l.PID == escapee }); ok {
		t.Errorf("the escapee %d, not marked, has a daemon line", escapee)
	}
	if !alive(daemon) {
		t.Errorf("the daemon %d did not outlive the run", daemon)
	}
	return lines
}

func eventsLimit(t *testing.T, o runOpts) []evLine {
	dir := sharedDir(t)
	path := eventsFile(dir)
	res := run(t, o, "run", "--pids", "20", "-t", "5", "--events", path, "--", "sh", "-c", escapee(dir, "fork"))
	hog := readPID(t, dir, "hog")
	killOnCleanup(t, hog)
	lines := readEvents(t, path)
	l, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "limit" })
	if !ok || l.Limit != "pids" || l.Unit != "processes" || l.EnforcedBy == "" || l.Action == "" {
		t.Fatalf("the limit line: %+v (found %v); lines %+v", l, ok, lines)
	}
	e := lines[len(lines)-1]
	switch res.code {
	case 137: // sampled: the tree was killed for it
		if e.Why != "limit" || e.Limit != "pids" {
			t.Errorf("the end of a run the limit killed: %+v", e)
		}
		if _, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "signal" && l.Signal == "SIGKILL" && l.Why == "limit" }); !ok {
			t.Errorf("no SIGKILL line for the limit: %+v", lines)
		}
	case 124: // pids.max: the kernel refused the forks until the timeout
		if !strings.Contains(l.Action, "refused") || e.Why != "timeout" {
			t.Errorf("the limit %+v and end %+v of a limit the kernel held", l, e)
		}
	default:
		t.Errorf("exit status %d, want 137 or 124; stderr:\n%s", res.code, res.stderr)
	}
	return lines
}

// TestEventsSessionInPIDNamespace: contain in a PID namespace whose
// processes' session leader is out of it (a container started from
// outside, unshare without setsid: getsid says 0, as for every job of a
// CI runner's container) still says which escapee left COMMAND's session:
// the setsid escapee's joined line and leftover entry say it left, the
// double-forked one's that it did not. Before, the joined line had no
// left_session at all there (contain took its own session 0 for "not
// read"), which is how CI's run of TestEventsEveryKind failed.
func TestEventsSessionInPIDNamespace(t *testing.T) {
	inNamespaces(t, func(t *testing.T, o runOpts) {
		dir := sharedDir(t)
		events, reportPath := eventsFile(dir), filepath.Join(dir, "report.json")
		// COMMAND leaves two escapees and ends once contain has said
		// both joined (or after a minute): nothing here waits on time.
		command := fmt.Sprintf(`setsid sleep 300 & echo $! > %[1]s/setsid
(sleep 301 & echo $! > %[1]s/double)
i=0
until [ "$(grep -c '"kind":"joined"' %[2]s)" -ge 2 ] || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done
`, dir, events)
		if err := os.WriteFile(filepath.Join(dir, "command.sh"), []byte(command), 0o755); err != nil {
			t.Fatal(err)
		}
		inNamespace(t, o, fmt.Sprintf("%s run -g 5s --events %s --report %s -- sh %s/command.sh > %s/run.out 2>&1; echo $? > %s/status; sleep 300",
			bin, events, reportPath, dir, dir, dir))
		waitFor(t, "contain's end in the namespace", 90*time.Second, func() bool { return nonEmpty(filepath.Join(dir, "status")) })
		out, _ := os.ReadFile(filepath.Join(dir, "run.out"))
		if st, _ := os.ReadFile(filepath.Join(dir, "status")); strings.TrimSpace(string(st)) != "0" {
			t.Fatalf("contain in the namespace ended %s:\n%s", st, out)
		}
		setsid, double := readPID(t, dir, "setsid"), readPID(t, dir, "double")
		lines := readEvents(t, events)
		want := map[int]bool{setsid: true, double: false}
		for pid, left := range want {
			j, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "joined" && l.PID == pid })
			if !ok || j.LeftSession == nil || *j.LeftSession != left {
				t.Errorf("escapee %d's joined line (found %t): %+v; want left_session %t\n%s", pid, ok, j, left, out)
			}
		}
		r := readReport(t, reportPath)
		for pid, left := range want {
			i := slices.IndexFunc(r.Leftovers, func(l report.Leftover) bool { return l.PID == pid })
			if i < 0 {
				t.Errorf("escapee %d is not among the leftovers: %+v", pid, r.Leftovers)
			} else if l := r.Leftovers[i]; l.LeftSession == nil || *l.LeftSession != left {
				t.Errorf("escapee %d's leftover: left_session %v (absent: %v); want %t", pid, l.LeftSession, l.Absent, left)
			}
		}
	})
}
