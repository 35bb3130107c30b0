//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStopWaitBarePIDHint: `contain stop 1234` (and wait) where 1234 is a
// live contain run is still bad usage (2, one line), with the session it
// most likely means: the TOOL its command carries (-o), or CONTAIN when no
// process carries its tag (COMMAND cleared its environment). A PID that
// is no contain run gets no hint.
func TestStopWaitBarePIDHint(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	s := startSession(t, runOpts{}, tool, "")
	bare, _ := startContain(t, runOpts{}, "run", "--", "env", "-u", "RUNNING_PROCESS_ORIGINATOR", "sleep", "300")
	waitFor(t, "the untagged command", 10*time.Second, func() bool { return len(childrenOf(bare.Process.Pid)) > 0 })
	plain := startAs(t, false, withoutTag(os.Environ()), "sleep", "300")
	for _, c := range []struct {
		pid  int
		hint string
	}{
		{s.pid, fmt.Sprintf("did you mean %s?", s.value)},
		{bare.Process.Pid, fmt.Sprintf("did you mean CONTAIN:%d?", bare.Process.Pid)},
		{plain, ""},
	} {
		for _, cmd := range []string{"stop", "wait"} {
			res := run(t, runOpts{}, cmd, strconv.Itoa(c.pid))
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if res.code != 2 || res.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: "+cmd+": malformed originator value") ||
				c.hint != "" && !strings.HasSuffix(lines[0], c.hint+")") || c.hint == "" && strings.Contains(lines[0], "did you mean") {
				t.Errorf("contain %s %d: status %d, stdout %q, stderr %q; want 2 and one line ending %q", cmd, c.pid, res.code, res.stdout, res.stderr, c.hint)
			}
		}
	}
	wantAlive(t, "after the hints", s.pid, s.pids["child"], bare.Process.Pid, plain)
}

// childrenOf lists the live children of pid, by the parent each process
// names in /proc/PID/stat (the per-thread children files are reliable only
// while the children are stopped, proc(5)).
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestStopWaitNothingMatched: stop or wait on a session that no process
// carries, or -o with no session, says so once, on stderr; stop exits 1,
// as pkill does, wait 0, as SPEC says (there was nothing to wait for);
// stdout has nothing (the JSON has the session).
func TestStopWaitNothingMatched(t *testing.T) {
	t.Parallel()
	nope := fmt.Sprintf("NOPE%s:%d", uniqueTool(t), deadPID(t))
	for _, c := range []struct {
		args []string
		line string
		code int
	}{
		{[]string{"stop", nope}, "contain: stop: nothing to stop: no process carries " + nope, 1},
		{[]string{"stop", "-o", "NONE" + uniqueTool(t)}, "contain: stop: nothing to stop: no session matches -o NONE", 1},
		{[]string{"wait", nope}, "contain: wait: nothing to wait for: no process carries " + nope, 0},
		{[]string{"wait", "-o", "NONE" + uniqueTool(t)}, "contain: wait: nothing to wait for: no session matches -o NONE", 0},
	} {
		res := run(t, runOpts{}, c.args...)
		if lines := stderrLines(res); res.code != c.code || res.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], c.line) {
			t.Errorf("contain %q: status %d, stdout %q, stderr %q; want %d, nothing on stdout, and one line %q", c.args, res.code, res.stdout, res.stderr, c.code, c.line)
		}
		res = run(t, runOpts{}, append([]string{c.args[0], "--format", "json"}, c.args[1:]...)...)
		if res.code != c.code || !strings.HasPrefix(res.stdout, "{") || len(stderrLines(res)) != 1 {
			t.Errorf("contain %q --format json: status %d, stdout %q, stderr %q", c.args, res.code, res.stdout, res.stderr)
		}
	}
	// One named that matched beside one that did not: still 1, and the
	// one that matched is stopped.
	s := startSession(t, runOpts{}, uniqueTool(t), "")
	res := run(t, runOpts{}, "stop", s.value, nope)
	wantCode(t, res, 1)
	wantGone(t, "the session named beside one that matched nothing", s.pids)
	if strings.Contains(res.stdout, nope) || !strings.Contains(res.stdout, "session "+s.value+": asked PID") {
		t.Errorf("stdout:\n%s", res.stdout)
	}
}

// TestStopIgnoredSignal: a contain run started in the background by a
// non-interactive shell inherits SIGINT ignored, and keeps it so (as GNU
// timeout does). stop -s INT says so at once (not after -t) and exits 1,
// touching nothing; stop with TERM then ends it. With --kill, stop says
// so at once too, and kills it after -t.
func TestStopIgnoredSignal(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	dir := sharedDir(t)
	launch := func() (int, string) {
		t.Helper()
		os.Remove(dir + "/run")
		script := fmt.Sprintf(`%s run -o %s -- sleep 300 & echo $! > %s/run`, bin, tool, dir)
		startAs(t, false, withoutTag(os.Environ()), "sh", "-c", script)
		pid := readPID(t, dir, "run")
		killOnCleanup(t, pid)
		value := fmt.Sprintf("%s:%d", tool, pid)
		waitFor(t, "the run's command", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
		return pid, value
	}
	pid, value := launch()
	if ign := sigIgn(t, pid); ign&(1<<(2-1)) == 0 {
		t.Fatalf("contain run does not ignore SIGINT (SigIgn %x): the case this tests does not arise", ign)
	}
	command := tagged(value)
	began := time.Now()
	res := run(t, runOpts{}, "stop", "-s", "INT", "-t", "20", value)
	took := time.Since(began)
	want := fmt.Sprintf("contain: stop: session %s: PID %d ignores SIGINT; not waiting for it (try -s TERM)", value, pid)
	if lines := stderrLines(res); res.code != 1 || len(lines) != 1 || lines[0] != want || took > 5*time.Second {
		t.Errorf("stop -s INT: status %d after %v, stderr %q; want 1 at once and %q", res.code, took, res.stderr, want)
	}
	wantAlive(t, "after stop -s INT", append(command, pid)...)
	res = run(t, runOpts{}, "stop", "-t", "20", value)
	wantCode(t, res, 0)
	wantGone(t, "after stop -s TERM", map[string]int{"run": pid, "command": command[0]})

	pid, value = launch()
	began = time.Now()
	res = run(t, runOpts{}, "stop", "-s", "INT", "-t", "0.5", "--kill", value)
	wantCode(t, res, 0)
	if lines := stderrLines(res); len(lines) != 1 || lines[0] != fmt.Sprintf("contain: stop: session %s: PID %d ignores SIGINT; --kill ends it after 500ms", value, pid) {
		t.Errorf("stop -s INT --kill: stderr %q", res.stderr)
	}
	if alive(pid) || len(tagged(value)) > 0 {
		t.Errorf("stop --kill left the run (%v) or its command (%v)", alive(pid), tagged(value))
	}
}

// sigIgn reads the signals pid ignores.
func sigIgn(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no SigIgn in %s", b)
	return 0
}

// TestUnreadableSaidWhereItMatters: ps, stop, wait and reap say how many
// processes they could not read only where those could change the answer:
// when what was asked for matched nothing, and with reap -v. As nobody,
// root's processes (this test's, at least) cannot be read: a listing that
// finds what it was asked for says nothing of them; one that finds
// nothing does.
func TestUnreadableSaidWhereItMatters(t *testing.T) {
	t.Parallel()
	requireRoot(t, "root's processes next to nobody's contain")
	const skipped = "contain: skipped "
	nobody := runOpts{asNobody: true}
	said := func(res result) bool { return strings.Contains(res.stderr, skipped) }
	quiet := func(what string, res result, code int) {
		t.Helper()
		if res.code != code || said(res) {
			t.Errorf("%s: status %d (want %d), stderr %q: want no count of unreadable processes", what, res.code, code, res.stderr)
		}
	}
	loud := func(what string, res result, code int) {
		t.Helper()
		if res.code != code || !said(res) || strings.Count(res.stderr, skipped) != 1 {
			t.Errorf("%s: status %d (want %d), stderr %q: want the count, once", what, res.code, code, res.stderr)
		}
	}
	none := "NONE" + uniqueTool(t)
	nope := fmt.Sprintf("%s:%d", none, deadPID(t))

	tool := uniqueTool(t)
	s := startSession(t, nobody, tool, "")
	quiet("ps", run(t, nobody, "ps"), 0)
	quiet("ps -o TOOL", run(t, nobody, "ps", "-o", tool), 0)
	loud("ps -o NONE", run(t, nobody, "ps", "-o", none), 0)
	quiet("wait -t", run(t, nobody, "wait", "-t", "0.1", s.value), 124)
	loud("wait NONE", run(t, nobody, "wait", nope), 0)
	loud("stop NONE", run(t, nobody, "stop", nope), 1)
	quiet("stop", run(t, nobody, "stop", s.value), 0)
	wantGone(t, "stop", s.pids)

	orphan := fmt.Sprintf("%s:%d", tool, deadPID(t))
	startTagged(t, orphan, procOpts{nobody: true})
	loud("reap -n --session NONE", run(t, nobody, "reap", "-n", "--session", nope), 0)
	loud("reap -n -v", run(t, nobody, "reap", "-n", "-v", "--session", orphan), 0)
	quiet("reap", run(t, nobody, "reap", "-g", "0.5", "--session", orphan), 0)
	loud("reap, nothing left", run(t, nobody, "reap", "--session", orphan), 0)
}
