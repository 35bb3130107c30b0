//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestRegistryAfterEverythingDied: contain run writes its registry where
// there is no cgroup, so that contain reap finds what the session started
// even when contain, its shim and its guard were all killed at once (a
// machine-wide OOM, kill -9 of every PID a user owns) and the survivor
// wrote its title over its environment (no tag to read). A clean run
// leaves no registry behind.
func TestRegistryAfterEverythingDied(t *testing.T) {
	requireRoot(t, "runs contain as nobody")
	xdg, dir := registryDir(t, true)
	work := sharedDir(t)
	env := []string{"XDG_RUNTIME_DIR=" + xdg, "HOME=" + work}
	tool := fmt.Sprintf("REGRUN%d", os.Getpid())

	// A clean run: no file left.
	res := run(t, runOpts{asNobody: true, env: env}, "run", "-o", tool, "--", "sh", "-c", "sleep 0.1 & sleep 0.05")
	wantCode(t, res, 0)
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Fatalf("a clean run left %v", left)
	}

	// perl writes its title over its environment ($0), in a new session,
	// its parent gone: nothing but the registry links it to the session.
	script := fmt.Sprintf(`setsid perl -e '$0 = "contain registry test " . ("x" x 100000); open(F, ">", "%s/title.tmp"); print F $$; close F; rename("%s/title.tmp", "%s/title"); sleep 300' &
sleep 300`, work, work, work)
	cmd, stderr, _ := startContainLive(t, runOpts{asNobody: true, env: env}, "run", "-v", "-o", tool, "--", "sh", "-c", script)
	waitFor(t, "the title", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(work, "title"))
		return err == nil
	})
	survivor := readPID(t, work, "title")
	killOnCleanup(t, survivor)
	guard := guardPID(t, stderr)
	m := regexp.MustCompile(`shim: PID (\d+)`).FindStringSubmatch(stderr())
	if m == nil {
		t.Fatalf("no shim:\n%s", stderr())
	}
	shim, _ := strconv.Atoi(m[1])
	// contain's scans must have seen it (5 to 200 ms apart).
	time.Sleep(400 * time.Millisecond)
	for _, pid := range []int{cmd.Process.Pid, shim, guard} {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(300 * time.Millisecond)
	if !alive(survivor) {
		t.Fatalf("the survivor %d did not survive contain, shim and guard: nothing left to test", survivor)
	}
	if !envWrittenOver(survivor) || slices.Contains(tagged(fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)), survivor) {
		t.Fatalf("the survivor %d still shows its tag: nothing left to test", survivor)
	}
	res = run(t, runOpts{asNobody: true, env: env}, "reap", "-o", tool, "-g", "0.5")
	wantCode(t, res, 0)
	waitFor(t, "the survivor's end", 3*time.Second, func() bool { return !alive(survivor) })
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("reap left the registry %v", left)
	}
}
