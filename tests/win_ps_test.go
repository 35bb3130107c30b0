//go:build windows

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startRecorded starts this binary as helper h (recording itself as name)
// outside any contain, with the environment entries given: what another
// tool's session, or what is left of one, looks like.
func startRecorded(t *testing.T, dir, h, name string, env ...string) recorded {
	t.Helper()
	cmd := exec.Command(self(t), name)
	cmd.Env = append(os.Environ(), asHelper(h, dir, env...).env...)
	if err := startCmd(t, cmd); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	return readRecord(t, dir, name)
}

type psOut struct {
	Sessions []struct {
		Originator struct{ Value string }
		State      string
		Processes  []struct {
			PID     int
			State   string
			Started string
			User    string
			Argv    []string
			Comm    string
			CPU     *float64 `json:"cpu_seconds"`
			RSS     *uint64  `json:"rss_bytes"`
			Absent  string   `json:"usage_absent"`
		}
		Totals struct {
			Processes int
			CPU       float64 `json:"cpu_seconds"`
			RSS       uint64  `json:"rss_bytes"`
		}
	}
	Unreadable map[string]int
}

func ps(t *testing.T, args ...string) psOut {
	t.Helper()
	res := run(t, runOpts{}, append([]string{"ps", "--format", "json"}, args...)...)
	wantCode(t, res, 0)
	var out psOut
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("contain ps --format json: %v\n%s", err, res.stdout)
	}
	return out
}

// TestWinPsAndReap: ps finds the sessions of any tool, tells orphaned from
// alive, daemon and malformed, reads a tag whatever the case of its name;
// reap kills the orphans only, sparing the live session, the daemon and the
// malformed tag, and catches a session that keeps starting processes.
func TestWinPsAndReap(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	u := fmt.Sprintf("W%d", os.Getpid())
	const gone = 2147483644 // no Windows PID is that high: an originator that is gone
	orphan := startRecorded(t, dir, "sleep", "orphan", fmt.Sprintf("RUNNING_PROCESS_ORIGINATOR=%sORPH:%d", u, gone))
	lower := startRecorded(t, dir, "sleep", "lower", fmt.Sprintf("running_process_originator=%sCASE:%d", u, gone))
	daemon := startRecorded(t, dir, "sleep", "daemon", fmt.Sprintf("RUNNING_PROCESS_ORIGINATOR=%sDMN:%d", u, gone), "RUNNING_PROCESS_IS_DAEMON=1")
	bad := startRecorded(t, dir, "sleep", "bad", "RUNNING_PROCESS_ORIGINATOR="+u+"BAD")
	live, _ := startContain(t, asHelper("sleep", dir), "run", "-o", u+"LIVE", "--", self(t), "live")
	liveProc := readRecord(t, dir, "live")

	want := map[string]struct {
		state string
		pid   int
	}{
		fmt.Sprintf("%sORPH:%d", u, gone):             {"orphaned", orphan.pid},
		fmt.Sprintf("%sCASE:%d", u, gone):             {"orphaned", lower.pid},
		fmt.Sprintf("%sDMN:%d", u, gone):              {"daemon", daemon.pid},
		u + "BAD":                                     {"malformed", bad.pid},
		fmt.Sprintf("%sLIVE:%d", u, live.Process.Pid): {"alive", liveProc.pid},
	}
	out := ps(t)
	found := 0
	for _, s := range out.Sessions {
		w, ok := want[s.Originator.Value]
		if !ok {
			continue
		}
		found++
		if s.State != w.state || len(s.Processes) != 1 || s.Processes[0].PID != w.pid {
			t.Errorf("session %s: %+v, want %s with PID %d", s.Originator.Value, s, w.state, w.pid)
			continue
		}
		p := s.Processes[0]
		started, err := time.Parse(time.RFC3339Nano, p.Started)
		if err != nil || time.Since(started) > 5*time.Minute || time.Since(started) < 0 {
			t.Errorf("PID %d started %q", p.PID, p.Started)
		}
		if !strings.Contains(p.User, `\`) || len(p.Argv) != 2 || !strings.HasSuffix(strings.ToLower(p.Argv[0]), ".exe") || p.Comm == "" {
			t.Errorf("PID %d: user %q, argv %q, comm %q", p.PID, p.User, p.Argv, p.Comm)
		}
		// Its usage, read through the handle ps opened (a Go program
		// has some megabytes resident), and its session's sums.
		if p.CPU == nil || p.RSS == nil || *p.RSS < 1<<20 || *p.CPU < 0 {
			t.Errorf("PID %d: usage %v s, %v bytes (%s)", p.PID, p.CPU, p.RSS, p.Absent)
		} else if s.Totals.Processes != 1 || s.Totals.RSS != *p.RSS || s.Totals.CPU != *p.CPU {
			t.Errorf("session %s: totals %+v, its one process %v s, %d bytes", s.Originator.Value, s.Totals, *p.CPU, *p.RSS)
		}
	}
	if found != len(want) {
		t.Fatalf("ps found %d of the %d sessions: %+v", found, len(want), out.Sessions)
	}
	if table := run(t, runOpts{}, "ps", "-o", u+"ORPH"); !strings.Contains(table.stdout, fmt.Sprintf("%sORPH:%d", u, gone)) || !strings.Contains(table.stdout, "orphaned") ||
		!strings.Contains(table.stdout, "  CPU  ") || !strings.Contains(table.stdout, "M  ") {
		t.Errorf("ps table:\n%s", table.stdout)
	}

	// A dry run kills nothing.
	res := run(t, runOpts{}, "reap", "-n", "-o", u+"ORPH")
	wantCode(t, res, 0)
	if !strings.Contains(res.stdout, "would") || orphan.goneWithin(200*time.Millisecond) {
		t.Fatalf("dry run: %s (orphan gone: %v)", res.stdout, orphan.gone())
	}

	res = run(t, runOpts{}, "reap", "-o", u+"ORPH", "-o", u+"CASE", "-o", u+"DMN", "-o", u+"LIVE", "-o", u+"BAD")
	wantCode(t, res, 0)
	if !orphan.goneWithin(10*time.Second) || !lower.goneWithin(10*time.Second) {
		t.Errorf("reap left an orphan alive:\n%s", res.stdout)
	}
	for name, r := range map[string]recorded{"the live session": liveProc, "the daemon": daemon, "the malformed tag": bad} {
		if r.gone() {
			t.Errorf("reap killed %s (PID %d):\n%s", name, r.pid, res.stdout)
		}
	}
	if !strings.Contains(res.stdout, "left alone") {
		t.Errorf("reap does not say what it left alone:\n%s", res.stdout)
	}

	res = run(t, runOpts{}, "reap", "--include-daemons", "-o", u+"DMN")
	wantCode(t, res, 0)
	if !daemon.goneWithin(10 * time.Second) {
		t.Errorf("--include-daemons did not reap the daemon:\n%s", res.stdout)
	}
}

// TestWinReapForkingSession: a session that keeps starting processes while
// it is reaped is reaped completely.
func TestWinReapForkingSession(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	value := fmt.Sprintf("W%dFORK:2147483640", os.Getpid())
	forker := startRecorded(t, dir, "forker", "forker", "RUNNING_PROCESS_ORIGINATOR="+value)
	time.Sleep(300 * time.Millisecond)
	res := run(t, runOpts{}, "reap", "--session", value)
	wantCode(t, res, 0)
	if !forker.goneWithin(10 * time.Second) {
		t.Fatalf("the forking process survived:\n%s", res.stdout)
	}
	time.Sleep(200 * time.Millisecond)
	for _, s := range ps(t).Sessions {
		if s.Originator.Value == value {
			t.Fatalf("processes of the reaped session are left: %+v\nreap said:\n%s", s.Processes, res.stdout)
		}
	}
}
