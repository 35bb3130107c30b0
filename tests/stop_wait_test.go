//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopOutput is the part of `contain stop --format json` the tests read.
type stopOutput struct {
	TimedOut bool `json:"timed_out"`
	Killed   bool `json:"killed"`
	Sessions []struct {
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Result string `json:"result"`
		Failed bool   `json:"failed"`
	} `json:"sessions"`
	Processes []struct {
		PID        int `json:"pid"`
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Result string `json:"result"`
		Alive  bool   `json:"alive"`
	} `json:"processes"`
}

// waitOutput is the part of `contain wait --format json` the tests read.
type waitOutput struct {
	TimedOut bool `json:"timed_out"`
	Sessions []struct {
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Result  string `json:"result"`
		Running []int  `json:"running"`
	} `json:"sessions"`
}

// stopResults maps each PID of stop's report to what it says of it.
func stopResults(out stopOutput) map[int]string {
	m := map[int]string{}
	for _, p := range out.Processes {
		m[p.PID] = p.Result
	}
	return m
}

// session is a contain run started for a test: its value, the PIDs its
// command recorded, and its result once it ends.
type containSession struct {
	value string
	pid   int
	pids  map[string]int
	wait  func() result
}

// startSession starts contain run -o tool with a shell command that runs
// prelude, starts a setsid escapee and a background child, records their
// PIDs and its own, and waits. extra goes before --.
func startSession(t *testing.T, o runOpts, tool, prelude string, extra ...string) containSession {
	t.Helper()
	dir := sharedDir(t)
	script := fmt.Sprintf(`%s setsid sleep 300 & echo $! > %s/escapee; sleep 300 & echo $! > %s/child; echo $$ > %s/sh; wait`,
		prelude, dir, dir, dir)
	args := append(append([]string{"run", "-o", tool}, extra...), "--", "sh", "-c", script)
	cmd, wait := startContain(t, o, args...)
	s := containSession{value: fmt.Sprintf("%s:%d", tool, cmd.Process.Pid), pid: cmd.Process.Pid, wait: wait, pids: map[string]int{}}
	for _, name := range []string{"escapee", "child", "sh"} {
		s.pids[name] = readPID(t, dir, name)
		killOnCleanup(t, s.pids[name])
	}
	waitFor(t, "the session's three processes", 10*time.Second, func() bool { return len(tagged(s.value)) >= 3 })
	return s
}

// wantGone fails unless none of pids is alive.
func wantGone(t *testing.T, what string, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s: %s (PID %d) still runs", what, name, pid)
		}
	}
}

// wantAlive fails unless all of pids are alive and not stopped.
func wantAlive(t *testing.T, what string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !alive(pid) || procState(pid) == 'T' {
			t.Errorf("%s: PID %d was touched (alive %v, state %c)", what, pid, alive(pid), procState(pid))
		}
	}
}

// TestStopSession: stop ends a live session started elsewhere, its setsid
// escapee included, and returns once the session and its contain run
// have ended: all of it gone, status 0, and the report names each process.
// As root, and as nobody (both the run and the stop).
func TestStopSession(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(map[bool]string{false: "root", true: "nobody"}[nobody], func(t *testing.T) {
			if nobody {
				requireRoot(t, "running as nobody")
			}
			o := runOpts{asNobody: nobody}
			s := startSession(t, o, uniqueTool(t), "")
			res := run(t, o, "stop", "--format", "json", s.value)
			wantCode(t, res, 0)
			// No wait: stop has returned, so everything has ended.
			wantGone(t, "after stop", s.pids)
			if alive(s.pid) {
				t.Errorf("contain run (PID %d) still runs after stop returned", s.pid)
			}
			if left := tagged(s.value); len(left) > 0 {
				t.Errorf("left of the session: %v", left)
			}
			out := decode[stopOutput](t, res)
			got := stopResults(out)
			for name, pid := range s.pids {
				if got[pid] != "ended" {
					t.Errorf("the report says of %s (PID %d): %q, want ended\n%s", name, pid, got[pid], res.stdout)
				}
			}
			if len(out.Sessions) != 1 || !strings.HasSuffix(out.Sessions[0].Result, "; ended") || out.TimedOut {
				t.Errorf("sessions: %+v", out.Sessions)
			}
			if r := s.wait(); r.code != 128+15 {
				t.Errorf("contain run ended with %d, want %d (COMMAND ended by SIGTERM)\n%s", r.code, 128+15, r.stderr)
			}
		})
	}
}

// TestStopLeavesOthersAlone: stopping one session leaves a second live
// session of the same tool and a session of another tool running, and
// -o stops every live session of a tool.
func TestStopLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	tool, other := uniqueTool(t), uniqueTool(t)+"X"
	a := startSession(t, runOpts{}, tool, "")
	b := startSession(t, runOpts{}, tool, "")
	c := startSession(t, runOpts{}, other, "")
	res := run(t, runOpts{}, "stop", a.value)
	wantCode(t, res, 0)
	wantGone(t, "the session stopped", a.pids)
	for _, s := range []containSession{b, c} {
		wantAlive(t, "another session", s.pid, s.pids["escapee"], s.pids["child"], s.pids["sh"])
	}
	if !strings.Contains(res.stdout, "session "+a.value+": asked PID") || strings.Contains(res.stdout, b.value) {
		t.Errorf("report:\n%s", res.stdout)
	}
	// -o: every live session of the tool, not the other tool's.
	res = run(t, runOpts{}, "stop", "-o", tool)
	wantCode(t, res, 0)
	wantGone(t, "-o", b.pids)
	wantAlive(t, "the other tool's session", c.pid, c.pids["escapee"])
}

// placeAt starts sleep 300 at PID target, through ns_last_pid, and
// reports whether it got it.
func placeAt(t *testing.T, target int) bool {
	t.Helper()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(target-1)), 0); err != nil {
		t.Fatalf("ns_last_pid: %v", err)
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	killOnCleanup(t, cmd.Process.Pid)
	if cmd.Process.Pid != target {
		cmd.Process.Kill()
		return false
	}
	return true
}

// TestStopRecycledOriginator: a session whose originator PID now names a
// process that started after the session's processes is orphaned: stop
// signals nothing, says so in one line that points to reap, and exits 1;
// with -o it lists it and exits 0. The members and the process at that
// PID still run.
func TestStopRecycledOriginator(t *testing.T) {
	t.Parallel()
	requireRoot(t, "writing /proc/sys/kernel/ns_last_pid")
	tool := uniqueTool(t)
	var member, target int
	for attempt := 0; attempt < 20; attempt++ {
		target = (exitedPID(t)+300+attempt*50)%(deadPID(t)-1000) + 300
		if exists(target) {
			continue
		}
		member = startTagged(t, fmt.Sprintf("%s:%d", tool, target), procOpts{})
		time.Sleep(20 * time.Millisecond) // a later start, in clock ticks
		if placeAt(t, target) {
			break
		}
		syscall.Kill(member, syscall.SIGKILL)
		member = 0
	}
	if member == 0 {
		t.Fatal("could not place a process at a chosen PID in 20 attempts")
	}
	value := fmt.Sprintf("%s:%d", tool, target)
	res := run(t, runOpts{}, "stop", "-t", "5", value)
	wantCode(t, res, 1)
	lines := stderrLines(res)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || !strings.Contains(lines[0], "orphaned") ||
		!strings.Contains(lines[0], "contain reap --session "+value) {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	res = run(t, runOpts{}, "stop", "-t", "5", "-o", tool)
	wantCode(t, res, 0)
	if !strings.Contains(res.stdout, "left alone: orphaned") || !strings.Contains(res.stdout, "contain reap --session "+value) {
		t.Errorf("-o does not list the orphaned session as left alone:\n%s", res.stdout)
	}
	time.Sleep(100 * time.Millisecond)
	wantAlive(t, "the recycled originator's session", member, target)
}

// TestStopAnotherUsersOriginator: nobody cannot stop a session whose
// originator is root's, even though it can see the session's processes
// (they run as nobody): status 1, and nothing is signalled.
func TestStopAnotherUsersOriginator(t *testing.T) {
	t.Parallel()
	requireRoot(t, "processes of two users")
	tool := uniqueTool(t)
	originator := startAs(t, false, os.Environ(), "sleep", "300")
	value := fmt.Sprintf("%s:%d", tool, originator)
	member := startTagged(t, value, procOpts{nobody: true})
	res := run(t, runOpts{asNobody: true}, "stop", "-t", "5", value)
	wantCode(t, res, 1)
	if lines := stderrLines(res); len(lines) != 1 || !strings.Contains(lines[0], "belongs to another user") {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	time.Sleep(100 * time.Millisecond)
	wantAlive(t, "root's originator and its session", originator, member)
}

// TestStopTimeout: a session that takes long to close (its contain run
// has a grace period of a minute, and the command ignores SIGTERM) keeps
// stop past -t: 124, and everything still runs; stop -t --kill then ends
// it, 0. Another tool's session whose originator ignores SIGTERM is not
// waited for: stop says so at once, 1; --kill kills it through its pin
// after -t, then the session as reap would.
func TestStopTimeout(t *testing.T) {
	t.Parallel()
	t.Run("contain run", func(t *testing.T) {
		s := startSession(t, runOpts{}, uniqueTool(t), `trap "" TERM;`, "--grace", "60s")
		began := time.Now()
		res := run(t, runOpts{}, "stop", "-t", "1", s.value)
		wantCode(t, res, 124)
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("stop -t 1 took %v", took)
		}
		if lines := stderrLines(res); len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || !strings.Contains(res.stdout, "still running") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
		}
		wantAlive(t, "after -t", s.pid, s.pids["escapee"], s.pids["child"], s.pids["sh"])
		res = run(t, runOpts{}, "stop", "-t", "1", "--kill", "--format", "json", s.value)
		wantCode(t, res, 0)
		wantGone(t, "after --kill", s.pids)
		if alive(s.pid) {
			t.Errorf("contain run still runs after stop --kill")
		}
	})
	t.Run("another tool", func(t *testing.T) {
		tool := uniqueTool(t)
		dir := t.TempDir()
		script := fmt.Sprintf(`trap "" TERM; RUNNING_PROCESS_ORIGINATOR=%s:$$ sleep 300 & echo $! > %s/child; wait`, tool, dir)
		originator := startAs(t, false, withoutTag(os.Environ()), "sh", "-c", script)
		child := readPID(t, dir, "child")
		killOnCleanup(t, child)
		value := fmt.Sprintf("%s:%d", tool, originator)
		waitFor(t, "the child's tag", 10*time.Second, func() bool { return slices.Contains(tagged(value), child) })
		began := time.Now()
		res := run(t, runOpts{}, "stop", "-t", "20", value)
		wantCode(t, res, 1)
		if lines := stderrLines(res); time.Since(began) > 5*time.Second || len(lines) != 1 ||
			lines[0] != fmt.Sprintf("contain: stop: session %s: PID %d ignores SIGTERM; not waiting for it (-t DURATION --kill ends it)", value, originator) {
			t.Errorf("stop -t 20 on an originator that ignores SIGTERM: after %v, stderr %q", time.Since(began), res.stderr)
		}
		wantAlive(t, "after stop", originator, child)
		res = run(t, runOpts{}, "stop", "-t", "0.5", "--kill", "--format", "json", value)
		wantCode(t, res, 0)
		if alive(originator) || alive(child) {
			t.Fatalf("after --kill: originator alive %v, child alive %v\n%s", alive(originator), alive(child), res.stdout)
		}
		out := decode[stopOutput](t, res)
		if got := stopResults(out)[child]; got != "killed with SIGKILL" {
			t.Errorf("the report says of the child: %q\n%s", got, res.stdout)
		}
		if !out.TimedOut || !out.Killed || len(out.Sessions) != 1 || !strings.Contains(out.Sessions[0].Result, "killed after") {
			t.Errorf("report: %+v", out)
		}
	})
}

// TestStopForkingSession: over a few rounds, stop ends sessions that
// start a process every few milliseconds: a contain run's (asked to
// stop), and another tool's whose originator ignores SIGTERM (--kill,
// which reaps it as reap does, stopped first).
func TestStopForkingSession(t *testing.T) {
	t.Parallel()
	for round := 0; round < 3; round++ {
		tool := uniqueTool(t)
		cmd, wait := startContain(t, runOpts{}, "run", "-o", tool, "--", "sh", "-c", `while :; do sleep 300 & sleep 0.005; done`)
		value := fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)
		waitFor(t, "the session to grow", 10*time.Second, func() bool { return len(tagged(value)) > 10 })
		res := run(t, runOpts{}, "stop", "-t", "30", value)
		wantCode(t, res, 0)
		if left := tagged(value); len(left) > 0 || alive(cmd.Process.Pid) {
			t.Fatalf("round %d: %d processes left, contain alive %v", round, len(left), alive(cmd.Process.Pid))
		}
		wait()

		tool = uniqueTool(t)
		script := fmt.Sprintf(`trap "" TERM; export RUNNING_PROCESS_ORIGINATOR=%s:$$; while :; do sleep 300 & sleep 0.005; done`, tool)
		originator := startAs(t, false, withoutTag(os.Environ()), "sh", "-c", script)
		value = fmt.Sprintf("%s:%d", tool, originator)
		t.Cleanup(func() {
			for _, p := range tagged(value) {
				syscall.Kill(p, syscall.SIGKILL)
			}
		})
		waitFor(t, "the session to grow", 10*time.Second, func() bool { return len(tagged(value)) > 10 })
		res = run(t, runOpts{}, "stop", "-t", "0.3", "--kill", value)
		wantCode(t, res, 0)
		if left := tagged(value); len(left) > 0 || alive(originator) {
			t.Fatalf("round %d, --kill: %d processes left, originator alive %v\n%s", round, len(left), alive(originator), res.stdout)
		}
	}
}

// TestStopWaitFromInside: stop and wait run from inside the session they
// name never wait for themselves or their ancestors: the shell that runs
// them carries the session's tag, and they return at once.
func TestStopWaitFromInside(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"wait", "stop"} {
		t.Run(cmd, func(t *testing.T) {
			tool := uniqueTool(t)
			dir := t.TempDir()
			originator := startAs(t, false, os.Environ(), "sleep", "300")
			value := fmt.Sprintf("%s:%d", tool, originator)
			script := fmt.Sprintf(`%s %s -t 20 %s > %s/out; echo $? > %s/code; exec sleep 300`, bin, cmd, value, dir, dir)
			sh := startTagged(t, value, procOpts{}, "sh", "-c", script)
			began := time.Now()
			code := readFileLine(t, dir, "code", 30*time.Second)
			if code != "0" || time.Since(began) > 15*time.Second {
				out, _ := os.ReadFile(filepath.Join(dir, "out"))
				t.Fatalf("contain %s from inside: status %s after %v\n%s", cmd, code, time.Since(began), out)
			}
			if !alive(sh) {
				t.Error("the shell that ran it is gone")
			}
			if cmd == "stop" && alive(originator) {
				t.Error("stop did not ask the originator")
			}
			if cmd == "wait" && !alive(originator) {
				t.Error("wait touched the originator")
			}
		})
	}
}

// stderrLines is what contain said on stderr, less the count of processes
// whose environment it could not read (other users', processes of other
// containers), which depends on the machine.
func stderrLines(res result) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "contain: skipped ") {
			out = append(out, l)
		}
	}
	return out
}

// readFileLine waits up to d for dir/name to hold a line, and returns it.
func readFileLine(t *testing.T, dir, name string, d time.Duration) string {
	t.Helper()
	var b []byte
	waitFor(t, name, d, func() bool {
		b, _ = os.ReadFile(filepath.Join(dir, name))
		return strings.HasSuffix(string(b), "\n")
	})
	return strings.TrimSpace(string(b))
}

// TestWait: wait returns once a session has ended, not before; -t gives
// up with 124 while it still runs; a session with no process matches
// nothing (1, as pidwait; TestStopWaitNothingMatched); the JSON says each
// session's end.
func TestWait(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	cmd, runWait := startContain(t, runOpts{}, "run", "-o", tool, "--", "sleep", "1")
	value := fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)
	waitFor(t, "the session to start", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
	res := run(t, runOpts{}, "wait", "--format", "json", value)
	wantCode(t, res, 0)
	if left := tagged(value); len(left) > 0 {
		t.Fatalf("wait returned while %v still ran", left)
	}
	out := decode[waitOutput](t, res)
	if out.TimedOut || len(out.Sessions) != 1 || out.Sessions[0].Result != "ended" || out.Sessions[0].Originator.Value != value {
		t.Errorf("wait: %+v", out)
	}
	wantCode(t, runWait(), 0)

	long, _ := startContain(t, runOpts{}, "run", "-o", tool, "--", "sleep", "30")
	value = fmt.Sprintf("%s:%d", tool, long.Process.Pid)
	waitFor(t, "the session to start", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
	began := time.Now()
	res = run(t, runOpts{}, "wait", "-t", "0.5", "--format", "json", "-o", tool)
	wantCode(t, res, 124)
	if took := time.Since(began); took < 500*time.Millisecond || took > 10*time.Second {
		t.Errorf("wait -t 0.5 took %v", took)
	}
	out = decode[waitOutput](t, res)
	if !out.TimedOut || len(out.Sessions) != 1 || out.Sessions[0].Result != "still running" || len(out.Sessions[0].Running) != 1 {
		t.Errorf("wait -t: %+v", out)
	}
	if len(tagged(value)) == 0 {
		t.Error("the session ended: wait -t proved nothing")
	}

	nothing := fmt.Sprintf("%s:%d", tool, deadPID(t))
	res = run(t, runOpts{}, "wait", nothing)
	wantCode(t, res, 0)
	if lines := stderrLines(res); res.stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "nothing to wait for: no process carries "+nothing) {
		t.Errorf("wait on nothing: stdout %q, stderr %q", res.stdout, res.stderr)
	}
	res = run(t, runOpts{}, "stop", nothing)
	wantCode(t, res, 1)
	if lines := stderrLines(res); res.stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "nothing to stop") {
		t.Errorf("stop on nothing: stdout %q, stderr %q", res.stdout, res.stderr)
	}
}

// TestStopWaitBadUsage: bad input is exit 2 and exactly one line on
// stderr, starting "contain: ".
func TestStopWaitBadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"stop", "X"}, {"stop", "X:0"}, {"stop", "-o", "bad tool!"}, {"stop", "-t", "-1", "X:1"}, {"wait"},
		{"stop", "-s", "NOPE", "X:1"}, {"stop"}, {"wait", "-t", "x", "X:1"}, {"stop", "--kill", "X:1"},
	} {
		res := run(t, runOpts{}, args...)
		if res.code != 2 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "contain: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
	}
}
