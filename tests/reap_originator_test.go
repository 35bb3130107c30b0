//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReapSparesLiveOriginator: a shell that carries an orphaned session's
// tag and is itself the originator of a live session (its child carries
// TOOL:$$) is a member of the orphaned session, but reap never kills the
// originator of a live session: it is left alone with the reason, and so
// is its live session. The orphaned session's other member is reaped.
func TestReapSparesLiveOriginator(t *testing.T) {
	tool := uniqueTool(t)
	orphaned := fmt.Sprintf("%s:%d", tool, deadPID(t))
	dir := t.TempDir()
	// The shell starts a child tagged with its own PID and records it.
	script := fmt.Sprintf(`RUNNING_PROCESS_ORIGINATOR=%s:$$ sleep 300 & echo $! > %s/child; wait`, tool, dir)
	sh := startTagged(t, orphaned, procOpts{}, "sh", "-c", script)
	other := startTagged(t, orphaned, procOpts{})
	waitFor(t, "the child to start", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "child"))
		return len(b) > 0
	})
	child := readPID(t, dir, "child")
	killOnCleanup(t, child)
	live := fmt.Sprintf("%s:%d", tool, sh)
	waitFor(t, "the child's tag", 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", child))
		return strings.Contains(string(b), "RUNNING_PROCESS_ORIGINATOR="+live+"\x00")
	})

	res := run(t, runOpts{}, "reap", "--format", "json", "-o", tool, "-g", "300ms")
	wantCode(t, res, 0)
	out := decode[reapOutput](t, res)
	got := results(out)
	waitFor(t, "the orphaned session's other member to die", 2*time.Second, func() bool { return !alive(other) })
	time.Sleep(100 * time.Millisecond)
	if !alive(sh) {
		t.Errorf("reap killed %d, the originator of the live session %s: %q\nstdout: %s", sh, live, got[sh], res.stdout)
	}
	if !alive(child) {
		t.Errorf("reap killed %d, a process of the live session %s", child, live)
	}
	if st := procState(sh); st == 'T' {
		t.Errorf("reap left %d stopped", sh)
		syscall.Kill(sh, syscall.SIGCONT)
	}
	if r := got[sh]; !strings.HasPrefix(r, "left alone: ") || !strings.Contains(r, live) {
		t.Errorf("the report says of %d: %q, want it left alone as the originator of %s\nstdout: %s", sh, r, live, res.stdout)
	}
	if _, listed := got[child]; listed {
		t.Errorf("the live session's process is in the report: %q", got[child])
	}
	liveSkipped := false
	for _, s := range out.SkippedSessions {
		liveSkipped = liveSkipped || s.Originator == live && s.State == "alive"
	}
	if !liveSkipped {
		t.Errorf("the live session %s is not among the sessions left alone: %+v", live, out.SkippedSessions)
	}
}
