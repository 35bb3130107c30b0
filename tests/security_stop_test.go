//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// A tag is a claim: nobody can tag its own processes with any originator
// it likes. contain stop asks an originator only when it is plausibly the
// session's: the same user as every process of the session, started
// before them, never PID 1, never an ancestor of the stop, and a contain
// run when the tool is CONTAIN. --kill kills nothing of a session it did
// not ask. wait says so, and fails, when it cannot see a session.

// TestStopForgedTagsPIDNamespace: in a PID namespace whose PID 1 is a
// shell of the test's (so that the real init is never signalled), nobody
// tags sleeps with TOOL:<a root sleep> and TOOL:1. Root's stop -o TOOL
// asks neither originator: the root sleep lives, PID 1's TERM trap never
// runs, one line per session says why, and the status is 1 (no session
// could be asked). stop --kill kills nothing either.
func TestStopForgedTagsPIDNamespace(t *testing.T) {
	t.Parallel()
	requireRoot(t, "a PID namespace, and processes of two users")
	testtool.Need(t, "setpriv", "util-linux")
	testtool.Need(t, "unshare", "util-linux")
	tool := uniqueTool(t)
	dir := sharedDir(t)
	nb := "setpriv --reuid=nobody --regid=nogroup --clear-groups --"
	script := fmt.Sprintf(`
trap 'echo TERM >> %[1]s/init' TERM
sleep 300 & victim=$!
echo $victim > %[1]s/victim
RUNNING_PROCESS_ORIGINATOR=%[2]s:$victim %[3]s sleep 300 & a=$!
RUNNING_PROCESS_ORIGINATOR=%[2]s:1 %[3]s sleep 300 & b=$!
n=0; while [ "$(cat /proc/$a/comm /proc/$b/comm)" != "$(printf 'sleep\nsleep')" ] && [ $n -lt 500 ]; do sleep 0.01; n=$((n+1)); done
%[4]s stop -t 2 -o %[2]s > %[1]s/out 2> %[1]s/err; echo $? > %[1]s/code
cut -d' ' -f3 /proc/$victim/stat > %[1]s/victim_state
cut -d' ' -f3 /proc/$a/stat /proc/$b/stat > %[1]s/members_state
%[4]s stop -t 1 --kill -o %[2]s > %[1]s/out2 2> %[1]s/err2; echo $? > %[1]s/code2
cut -d' ' -f3 /proc/$victim/stat > %[1]s/victim_state2
cut -d' ' -f3 /proc/$a/stat /proc/$b/stat > %[1]s/members_state2
kill -9 $victim $a $b
echo done > %[1]s/done
`, dir, tool, nb, bin)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script)
	cmd.Env = withoutTag(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unshare: %v\n%s", err, out)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b))
	}
	if read("done") != "done" {
		t.Fatalf("the namespace's script did not finish")
	}
	if got := read("init"); got != "" {
		t.Errorf("PID 1 of the namespace was sent SIGTERM (%q)", got)
	}
	victim := read("victim")
	for _, round := range []struct{ code, err, victim, members string }{
		{"code", "err", "victim_state", "members_state"},
		{"code2", "err2", "victim_state2", "members_state2"},
	} {
		if got := read(round.victim); got != "S" {
			t.Errorf("%s: root's sleep, named by a forged tag, is in state %q, want S (alive)", round.code, got)
		}
		if got := strings.Fields(read(round.members)); len(got) != 2 || got[0] != "S" || got[1] != "S" {
			t.Errorf("%s: the forging sleeps are in states %q, want both S (nothing asked, nothing killed)", round.code, got)
		}
		if got := read(round.code); got != "1" {
			t.Errorf("%s: status %s, want 1 (no session could be asked)\nstdout: %s\nstderr: %s", round.code, got, read("out"), read(round.err))
		}
		var lines []string
		for _, l := range strings.Split(read(round.err), "\n") {
			if l != "" && !strings.HasPrefix(l, "contain: skipped ") {
				lines = append(lines, l)
			}
		}
		want := map[string]string{
			tool + ":1":         "PID 1 is never an originator",
			tool + ":" + victim: "another user",
		}
		if len(lines) != len(want) {
			t.Errorf("%s: want one line per session on stderr:\n%s", round.err, read(round.err))
		}
		for value, why := range want {
			found := false
			for _, l := range lines {
				found = found || strings.HasPrefix(l, "contain: stop: not asking ") && strings.Contains(l, value+":") && strings.Contains(l, why)
			}
			if !found {
				t.Errorf("%s: no line says why %s was not asked (%q):\n%s", round.err, value, why, read(round.err))
			}
		}
	}
}

// TestStopKillForgedContainTag: nobody tags a sleep CONTAIN:<a root shell
// that ignores SIGTERM>. Root's stop -t 1 --kill of that session neither
// signals the shell nor kills the sleep: status 1, one line.
func TestStopKillForgedContainTag(t *testing.T) {
	t.Parallel()
	requireRoot(t, "processes of two users")
	dir := t.TempDir()
	victim := startAs(t, false, withoutTag(os.Environ()), "sh", "-c", fmt.Sprintf(`trap "" TERM; sleep 300 & echo $! > %s/child; wait`, dir))
	killOnCleanup(t, readPID(t, dir, "child"))
	value := fmt.Sprintf("CONTAIN:%d", victim)
	member := startTagged(t, value, procOpts{nobody: true})
	res := run(t, runOpts{}, "stop", "-t", "1", "--kill", value)
	wantCode(t, res, 1)
	lines := stderrLines(res)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], fmt.Sprintf("contain: stop: not asking PID %d for %s: ", victim, value)) {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	time.Sleep(100 * time.Millisecond)
	wantAlive(t, "the forged session and the shell it names", victim, member)
}

// TestStopNotAContainRun: a CONTAIN session whose originator is not a
// contain run, though everything is nobody's own, is not asked: nobody's
// stop leaves the sleep it names alive, says it is not a contain run, 1.
func TestStopNotAContainRun(t *testing.T) {
	t.Parallel()
	requireRoot(t, "running as nobody")
	originator := startAs(t, true, withoutTag(os.Environ()), "sleep", "300")
	value := fmt.Sprintf("CONTAIN:%d", originator)
	member := startTagged(t, value, procOpts{nobody: true})
	res := run(t, runOpts{asNobody: true}, "stop", "-t", "1", value)
	wantCode(t, res, 1)
	if lines := stderrLines(res); len(lines) != 1 || !strings.Contains(lines[0], "not asking") || !strings.Contains(lines[0], "not a contain run") {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	time.Sleep(100 * time.Millisecond)
	wantAlive(t, "the sleep a CONTAIN tag names, and the session", originator, member)
}

// TestStopLegitimateNobodySession: a contain run as nobody is still
// stopped, by nobody and by root.
func TestStopLegitimateNobodySession(t *testing.T) {
	t.Parallel()
	requireRoot(t, "running as nobody")
	for _, by := range []string{"nobody", "root"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			s := startSession(t, runOpts{asNobody: true}, "CONTAIN", "")
			res := run(t, runOpts{asNobody: by == "nobody"}, "stop", "-t", "20", s.value)
			wantCode(t, res, 0)
			wantGone(t, "after stop by "+by, s.pids)
			if r := s.wait(); r.code != 128+15 {
				t.Errorf("contain run ended with %d, want %d\n%s", r.code, 128+15, r.stderr)
			}
		})
	}
}

// TestWaitCannotSee: nobody cannot read the environment of root's
// contain run, nor of its sleep: wait on that session says it cannot see
// it and exits 1, never "nothing to wait for".
func TestWaitCannotSee(t *testing.T) {
	t.Parallel()
	requireRoot(t, "running as nobody")
	cmd, _ := startContain(t, runOpts{}, "run", "--", "sleep", "30")
	value := fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid)
	waitFor(t, "the session to start", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
	res := run(t, runOpts{asNobody: true}, "wait", "-t", "1", value)
	wantCode(t, res, 1)
	if lines := stderrLines(res); len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: wait: ") || !strings.Contains(lines[0], "cannot see") {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	if strings.Contains(res.stdout, "nothing to wait for") || strings.Contains(res.stdout, "ended") {
		t.Errorf("wait reported an end it could not see:\n%s", res.stdout)
	}
	if len(tagged(value)) == 0 {
		t.Error("the session ended: the test proved nothing")
	}
}
