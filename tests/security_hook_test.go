//go:build linux

package tests

import (
	"fmt"
	"testing"
	"time"
)

// TestOnTimeoutHookEndsWithContain: what contain starts on its own behalf
// ends with it, crash included. contain is killed with SIGKILL while its
// --on-timeout command runs, with a background job, a double-forked
// process and a foreground child: the guard ends all of them at once, not
// after the hook's grace period (30s). Before the fix the guard ended the
// session but the hook's sh and its sleeps stayed, re-parented to PID 1.
// As root (a cgroup), as nobody (the shim), and tracking alone.
func TestOnTimeoutHookEndsWithContain(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			hook := fmt.Sprintf(`sleep 41 & echo $! > %[1]s/bg; (sleep 43 & echo $! > %[1]s/orphan); echo $$ > %[1]s/hook; sleep 42`, dir)
			cmd, stderr, wait := startContainLive(t, m.o, "run", "-v", "-t", "0.3", "-g", "30", "--on-timeout", hook, "--", "sleep", "100")
			pids := map[string]int{}
			for _, name := range []string{"hook", "bg", "orphan"} {
				pids[name] = readPID(t, dir, name)
				killOnCleanup(t, pids[name])
			}
			guard := guardPID(t, stderr)
			cmd.Process.Kill()
			wait()
			// The crash promise's second, and the guard's start, on a busy
			// machine; far less than the 30s the hook would have had.
			deadline := time.Now().Add(5 * time.Second)
			for name, pid := range pids {
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("the hook's %s %d outlived contain's SIGKILL", name, pid)
				}
			}
			waitFor(t, "the crash guard to end", 15*time.Second, func() bool { return !alive(guard) })
			if t.Failed() {
				t.Logf("stderr:\n%s", stderr())
			}
		})
	}
}
