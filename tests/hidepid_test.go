//go:build linux

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// A hardened /proc (issue 37, part 2): mounted hidepid=1 (another user's
// /proc/PID is there but cannot be read), hidepid=2 (it is not there),
// hidepid=4 (only what this user may ptrace), subset=pid (no /proc/stat).
// Each test runs contain as nobody in a mount namespace of its own whose
// /proc is mounted so, beside root's sessions started on the host's /proc:
// what nobody cannot see is "cannot see", never gone.

// underProc runs argv as nobody in a mount namespace of its own whose
// /proc is a procfs mounted with opts; the test is skipped where such a
// /proc cannot be mounted.
func underProc(t *testing.T, opts string, argv ...string) result {
	t.Helper()
	needProcMount(t)
	const script = `mount -t proc -o "$0" proc /proc && exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, opts}, argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%q under /proc %s did not return within a minute; stderr:\n%s", argv, opts, res.stderr)
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%q under /proc %s: %v", argv, opts, err)
	}
	return res
}

var procMounting struct {
	once sync.Once
	err  error
}

// needProcMount skips the test where root cannot mount a procfs with
// hidepid in a mount namespace of its own (a container without the
// right), and needs unshare and setpriv.
func needProcMount(t *testing.T) {
	t.Helper()
	requireRoot(t, "mounting a /proc and running as nobody")
	testtool.Need(t, "unshare", "util-linux")
	testtool.Need(t, "setpriv", "util-linux")
	procMounting.once.Do(func() {
		out, err := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "mount -t proc -o hidepid=2,subset=pid proc /proc").CombinedOutput()
		if err != nil {
			procMounting.err = fmt.Errorf("%v: %s", err, out)
		}
	})
	if procMounting.err != nil {
		t.Skipf("cannot mount a /proc with hidepid here: %v", procMounting.err)
	}
}

// rootSession starts, as root on the host's /proc, contain run -o tool
// -- argv, and returns its session once a process carries it.
func rootSession(t *testing.T, tool string, argv ...string) (value string, pid int) {
	t.Helper()
	cmd, _ := startContain(t, runOpts{}, append([]string{"run", "-o", tool, "--"}, argv...)...)
	killOnCleanup(t, cmd.Process.Pid)
	value = fmt.Sprintf("%s:%d", tool, cmd.Process.Pid)
	waitFor(t, "the session to start", 10*time.Second, func() bool { return len(tagged(value)) > 0 })
	return value, cmd.Process.Pid
}

// hasLine reports whether a line of s holds every one of words.
func hasLine(s string, words ...string) bool {
	for _, l := range strings.Split(s, "\n") {
		all := l != ""
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return true
		}
	}
	return false
}

// TestHidepidCannotSee: root's live session, under a /proc that hides
// root's processes from nobody: nobody's wait and stop on it say they
// cannot see it, and why (the hidepid), and exit 1, never "nothing to
// wait for" (which exited 0 at once) nor "nothing to stop"; ps and reap
// say on stderr that other users' processes are hidden; the library says
// the same (Wait: ErrCannotSee; Stop: "cannot see"; Sessions' and Reap's
// Hidden). The session runs on.
func TestHidepidCannotSee(t *testing.T) {
	t.Parallel()
	needProcMount(t)
	for _, c := range []struct{ opts, shown string }{
		{"hidepid=2", "hidepid=2"},
		{"hidepid=1", "hidepid=1"},
		{"hidepid=invisible,subset=pid", "hidepid=2"},
		{"hidepid=4", "hidepid=4"},
	} {
		t.Run(c.opts, func(t *testing.T) {
			t.Parallel()
			tool := uniqueTool(t)
			value, pid := rootSession(t, tool, "sleep", "60")

			res := underProc(t, c.opts, bin, "wait", "-t", "10", value)
			if res.code != 1 || !hasLine(res.stderr, "contain: wait: cannot see session "+value, c.shown) ||
				strings.Contains(res.stderr+res.stdout, "nothing to wait for") {
				t.Errorf("wait: status %d, want 1 and why\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
			res = underProc(t, c.opts, bin, "stop", "-t", "10", value)
			if res.code != 1 || !hasLine(res.stderr, "contain: stop: cannot see session "+value, c.shown) ||
				strings.Contains(res.stderr+res.stdout, "nothing to stop") {
				t.Errorf("stop: status %d, want 1 and why\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
			hidden := []string{"contain: ", c.shown, "other users' processes are hidden"}
			res = underProc(t, c.opts, bin, "ps", "-o", tool)
			if res.code != 0 || !hasLine(res.stderr, hidden...) {
				t.Errorf("ps: status %d; want 0 and a line saying other users' processes are hidden\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
			res = underProc(t, c.opts, bin, "reap", "-o", tool)
			if res.code != 0 || !hasLine(res.stderr, hidden...) {
				t.Errorf("reap: status %d; want 0 and a line saying other users' processes are hidden\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
			s := libSee(t, c.opts, value, tool)
			if !s.CannotSee || !strings.Contains(s.Wait, c.shown) || len(s.Stop) != 1 || !strings.HasPrefix(s.Stop[0], "cannot see: ") ||
				!strings.Contains(s.Hidden, c.shown) || !strings.Contains(s.ReapHidden, c.shown) {
				t.Errorf("the library: %+v", s)
			}
			if !alive(pid) || len(tagged(value)) == 0 {
				t.Error("the session ended: the test proved nothing")
			}
		})
	}
}

// TestHidepidLiveNotOrphaned: root's contain runs COMMAND as nobody, so
// nobody sees the session's process but not its originator (hidepid=2).
// That originator runs (kill(PID, 0) answers EPERM): the session is
// alive to nobody's ps, nobody's reap leaves it alone (it reaped it as
// "PID is gone"), stop cannot ask it (it called it orphaned) and wait
// cannot see it; the library likewise.
func TestHidepidLiveNotOrphaned(t *testing.T) {
	t.Parallel()
	needProcMount(t)
	tool := uniqueTool(t)
	value, pid := rootSession(t, tool, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "sleep", "60")
	waitFor(t, "nobody's sleep", 10*time.Second, func() bool {
		for _, p := range tagged(value) {
			if commOf(p) == "sleep" {
				return true
			}
		}
		return false
	})
	members := tagged(value)
	const opts = "hidepid=2"

	res := underProc(t, opts, bin, "ps", "--format", "json", "-o", tool)
	var ps struct {
		Sessions []struct {
			State  string `json:"state"`
			Reason string `json:"reason"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &ps); err != nil || res.code != 0 || len(ps.Sessions) != 1 || ps.Sessions[0].State == "orphaned" {
		t.Errorf("ps: status %d, %v: %+v\nstdout: %s\nstderr: %s", res.code, err, ps, res.stdout, res.stderr)
	}
	res = underProc(t, opts, bin, "reap", "-o", tool)
	if res.code != 0 || !hasLine(res.stderr, "other users' processes are hidden") {
		t.Errorf("reap: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	for _, p := range members {
		if !alive(p) {
			t.Fatalf("nobody's reap ended PID %d of root's live session\nstdout: %s\nstderr: %s", p, res.stdout, res.stderr)
		}
	}
	res = underProc(t, opts, bin, "stop", "-t", "5", value)
	if res.code != 1 || !hasLine(res.stderr, "contain: stop: session "+value, "cannot ask", opts) || strings.Contains(res.stderr, "orphaned") {
		t.Errorf("stop: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	res = underProc(t, opts, bin, "wait", "-t", "5", value)
	if res.code != 1 || !hasLine(res.stderr, "contain: wait: cannot see session "+value, opts) {
		t.Errorf("wait: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	s := libSee(t, opts, value, tool)
	if !s.CannotSee || len(s.Stop) != 1 || !strings.HasPrefix(s.Stop[0], "refused: ") || len(s.States) != 1 || s.States[0] == "orphaned" ||
		!strings.Contains(s.ReapHidden, opts) {
		t.Errorf("the library: %+v", s)
	}
	for _, r := range s.Reaped {
		if !strings.HasPrefix(r, "left alone") {
			t.Errorf("the library's Reap: %q", r)
		}
	}
	for _, p := range append(members, pid) {
		if !alive(p) {
			t.Errorf("PID %d of root's live session ended", p)
		}
	}
}

// TestSubsetPidProc: a /proc mounted subset=pid has no /proc/stat, and
// hides no process: ps, reap, wait and stop work there (they failed,
// "cannot list processes: open /proc/stat"), and say nothing of hidden
// processes; root's session is another user's that nobody cannot read.
func TestSubsetPidProc(t *testing.T) {
	t.Parallel()
	needProcMount(t)
	tool := uniqueTool(t)
	value, pid := rootSession(t, tool, "sleep", "60")
	const opts = "subset=pid"
	res := underProc(t, opts, bin, "ps", "-o", tool)
	if res.code != 0 || strings.Contains(res.stderr, "hidden") || strings.Contains(res.stderr, "cannot list") {
		t.Errorf("ps: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	res = underProc(t, opts, bin, "reap", "-o", tool)
	if res.code != 0 || strings.Contains(res.stderr, "hidden") || strings.Contains(res.stderr, "cannot list") {
		t.Errorf("reap: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	res = underProc(t, opts, bin, "wait", "-t", "5", value)
	if res.code != 1 || !hasLine(res.stderr, "contain: wait: cannot see session "+value, "root") {
		t.Errorf("wait: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	res = underProc(t, opts, bin, "stop", "-t", "5", value)
	if res.code != 1 || !hasLine(res.stderr, "contain: stop: cannot see session "+value, "root") {
		t.Errorf("stop: status %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	if !alive(pid) {
		t.Error("the session ended")
	}
}

// libSeen is what libhost see prints (testdata/libhost's seen).
type libSeen struct {
	Wait       string   `json:"wait"`
	CannotSee  bool     `json:"cannot_see"`
	Stop       []string `json:"stop"`
	Listed     int      `json:"listed"`
	States     []string `json:"states"`
	Hidden     string   `json:"hidden"`
	Reaped     []string `json:"reaped"`
	ReapHidden string   `json:"reap_hidden"`
}

// libSee runs libhost see value tool as nobody under a /proc mounted
// with opts: what the library's Wait, Stop, Sessions and Reap say.
func libSee(t *testing.T, opts, value, tool string) libSeen {
	t.Helper()
	res := underProc(t, opts, needLibhost(t), "see", value, tool)
	var s libSeen
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil || res.code != 0 {
		t.Fatalf("libhost see: status %d, %v\nstdout: %s\nstderr: %s", res.code, err, res.stdout, res.stderr)
	}
	return s
}

// commOf is pid's command name ("" if it cannot be read).
func commOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
