//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestForgedOlderMemberKeepsSessionAlive: nobody gives a process of its
// own that is older than root's live contain run the run's tag (it
// exec's with it after the run started: an exec keeps the start time).
// Before the fix that made root's live session look orphaned: `contain
// ps` said orphaned, root's `contain reap --session` ended the live run's
// COMMAND, root's `contain stop` took the originator for a reused PID,
// and stop and wait waited for nobody's process until their timeout. Now
// only the originator's own user's processes are compared with its
// start, and another user's process holds neither stop nor wait: reap
// leaves the session alone, stop asks it, it ends, wait returns, and
// nobody's process is neither ended nor waited for.
func TestForgedOlderMemberKeepsSessionAlive(t *testing.T) {
	t.Parallel()
	requireRoot(t, "switches users")
	dir := sharedDir(t)
	// nobody's process, started first, waits for the run's PID.
	argv := nobodyUser.argv(t, "sh", "-c",
		fmt.Sprintf(`while [ ! -s %[1]s/R ]; do sleep 0.02; done; exec env RUNNING_PROCESS_ORIGINATOR=CONTAIN:$(cat %[1]s/R) sleep 300`, dir))
	forger := exec.Command(argv[0], argv[1:]...)
	forger.Env = withoutTag(os.Environ())
	forger.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := forger.Start(); err != nil {
		t.Fatal(err)
	}
	go forger.Wait()
	old := forger.Process.Pid
	killOnCleanup(t, old)
	time.Sleep(50 * time.Millisecond) // a few clock ticks older than the run

	cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "--", "sh", "-c", "echo $$ > "+dir+"/ready; exec sleep 300")
	waitReady(t, dir)
	command := readPID(t, dir, "ready")
	value := "CONTAIN:" + strconv.Itoa(cmd.Process.Pid)
	os.WriteFile(filepath.Join(dir, "R.tmp"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	os.Rename(filepath.Join(dir, "R.tmp"), filepath.Join(dir, "R"))
	waitFor(t, "nobody's older process to carry the run's tag", 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", old))
		return strings.Contains(string(b), "RUNNING_PROCESS_ORIGINATOR="+value+"\x00")
	})
	if startTime(t, old) >= startTime(t, cmd.Process.Pid) {
		t.Fatalf("nobody's process %d is not older than contain %d", old, cmd.Process.Pid)
	}

	ps := run(t, runOpts{}, "ps", "--format", "json", "-o", "CONTAIN")
	if state, _ := sessionState(decode[psOutput](t, ps), value); state != "alive" {
		t.Errorf("ps says %s's session is %q, want alive\n%s", value, state, ps.stdout)
	}
	res := run(t, runOpts{}, "reap", "-g", "0.2", "--session", value)
	wantCode(t, res, 0)
	if !alive(command) || !alive(cmd.Process.Pid) {
		t.Fatalf("root's reap ended the live run %s (COMMAND alive: %v)\nreap: %s%s", value, alive(command), res.stdout, res.stderr)
	}
	// A wait begun while the run lives, and the stop, are held by the
	// run's processes only, not by nobody's.
	_, waited := startContain(t, runOpts{}, "wait", "-t", "8", value)
	time.Sleep(200 * time.Millisecond)
	res = run(t, runOpts{}, "stop", "-t", "8", value)
	wantCode(t, res, 0)
	wait()
	if w := waited(); w.code != 0 {
		t.Errorf("contain wait: exit %d, want 0 once the run ended\n%s%s", w.code, w.stdout, w.stderr)
	}
	if alive(command) {
		t.Errorf("stop did not end the run's COMMAND %d\nstop: %s%s\nrun: %s", command, res.stdout, res.stderr, stderr())
	}
	if !alive(old) {
		t.Errorf("stop or the run ended nobody's process %d", old)
	}
}
