//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerboseNested: inside another session every -v line names its
// contain, so that whose "done:" is whose is plain; the outer one, in no
// session, keeps the plain prefix. Before, both said "contain:".
func TestVerboseNested(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{}, "run", "-v", "--", bin, "run", "-v", "--", "sh", "-c", "sleep 30 & exit 0")
	wantCode(t, res, 0)
	inner := regexp.MustCompile(`(?m)^contain\[(\d+)\]: done: exit 0, .*, 1 leftover \(1 ended by SIGTERM\)$`).FindStringSubmatch(res.stderr)
	if inner == nil {
		t.Fatalf("no inner summary naming its contain:\n%s", res.stderr)
	}
	if pid, _ := strconv.Atoi(inner[1]); pid == res.pid || pid <= 1 {
		t.Errorf("the inner summary names %d (the outer contain is %d)", pid, res.pid)
	}
	if !regexp.MustCompile(`(?m)^contain: done: exit 0, .*, no leftovers$`).MatchString(res.stderr) {
		t.Errorf("no outer summary with the plain prefix:\n%s", res.stderr)
	}
}

// TestVerboseSIGINTIgnored: a contain started with SIGINT ignored (a
// background job of a shell without job control) keeps it ignored, as GNU
// timeout does, and -v says so at the start, with the way out.
func TestVerboseSIGINTIgnored(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{}, "run", "--", "sh", "-c", `trap "" INT; exec "$0" run -v -- true`, bin)
	wantCode(t, res, 0)
	if !strings.Contains(res.stderr, "SIGINT was ignored when contain started") || !strings.Contains(res.stderr, "SIGTERM") {
		t.Errorf("-v did not say that SIGINT stays ignored:\n%s", res.stderr)
	}
	res = run(t, runOpts{}, "run", "-v", "--", "true")
	if strings.Contains(res.stderr, "SIGINT was ignored") {
		t.Errorf("said with SIGINT not ignored:\n%s", res.stderr)
	}
}

// TestVerboseGuardQuiet: after a crash the guard says one line per signal
// it sends to a process, not one more for the SIGCONT that resumes each
// (44 lines for 22 processes before).
func TestVerboseGuardQuiet(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "-v", "--", "sh", "-c",
		`for i in 1 2 3 4 5; do sleep 300 & done; echo > `+dir+`/ready; sleep 300`)
	guard := guardPID(t, stderr)
	waitFor(t, "the sleepers", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	})
	cmd.Process.Signal(syscall.SIGKILL)
	wait()
	waitFor(t, "the guard's end", 5*time.Second, func() bool { return !alive(guard) })
	out := stderr()
	if n := strings.Count(out, "SIGCONT"); n > 0 {
		t.Errorf("%d lines about SIGCONT:\n%s", n, out)
	}
	if n := strings.Count(out, "sent SIGTERM to"); n < 5 {
		t.Errorf("%d lines about SIGTERM, want one per sleeper at least:\n%s", n, out)
	}
}
