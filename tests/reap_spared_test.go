//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReapSpared: a daemon that contain run --allow-daemons spared (what
// contain run -d started inside the run), and that wrote its title over
// its environment, so that no tag can be read of it (redis-server, and
// testdata/titled), outlives the run; the run keeps its registry for it,
// with the daemon's PID and start time on a spared line; a plain contain
// reap of the run's session leaves it and says why; contain reap
// --include-daemons (--session TOOL:PID, or -o TOOL) ends it, exits 0,
// and removes the registry. Before, the clean end removed the registry
// and reap found nothing ("nothing to reap"), so the daemon ran on. As
// root (with a cgroup: the registry is made when the daemon is spared) and
// as nobody (the registry the run keeps without a cgroup).
func TestReapSpared(t *testing.T) {
	requireRoot(t, "runs as root with a cgroup and as nobody")
	t.Parallel()
	titled := titledBin(t)
	daemons := []struct {
		name   string
		have   func(*testing.T) bool
		start  string // shell; $D is the test's directory
		byTool bool   // reap with -o TOOL, else with --session TOOL:PID
	}{
		{"redis", func(t *testing.T) bool { return needTool(t, "redis-server", "redis-server") },
			`redis-server --port 0 --unixsocket $D/redis.sock --dir $D --logfile /dev/null --save ''`, false},
		{"titled", func(*testing.T) bool { return true }, titled + ` run $D/titled.pid`, true},
	}
	modes := []struct {
		name string
		o    runOpts
		uid  int
	}{{"root", runOpts{}, 0}, {"nobody", runOpts{asNobody: true}, 65534}}
	for _, d := range daemons {
		for _, m := range modes {
			t.Run(d.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				if !d.have(t) {
					return
				}
				dir := sharedDir(t)
				tool := fmt.Sprintf("SPARED%d_%s_%s", os.Getpid(), d.name, m.name)
				o := m.o
				o.env = append(o.env, "D="+dir)
				script := fmt.Sprintf(`%s run -d -- %s > $D/daemon; sleep 0.5`, bin, d.start)
				res := run(t, o, "run", "-o", tool, "--allow-daemons", "-v", "--", "sh", "-c", script)
				wantCode(t, res, 0)
				daemon := readPID(t, dir, "daemon")
				killOnCleanup(t, daemon)
				if !alive(daemon) {
					t.Fatalf("the daemon %d did not outlive the run; stderr:\n%s", daemon, res.stderr)
				}
				// What makes it hard: its environment shows no tag.
				waitFor(t, "the daemon to write its title over its environment", 5*time.Second, func() bool {
					b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", daemon))
					return err == nil && !strings.Contains(string(b), "RUNNING_PROCESS_ORIGINATOR=")
				})
				value := fmt.Sprintf("%s:%d", tool, res.pid) // setpriv execs contain: the same PID
				regs := func() []string {
					m, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("contain-%d*", m.uid), fmt.Sprintf("session.%d.*", res.pid)))
					return m
				}
				kept := regs()
				if len(kept) != 1 {
					t.Errorf("registries of the run after its clean end: %q, want one, kept for the daemon; stderr:\n%s", kept, res.stderr)
				} else if b, _ := os.ReadFile(kept[0]); !strings.Contains(string(b), fmt.Sprintf("\nspared %d ", daemon)) || !strings.HasSuffix(string(b), "\nend\n") {
					t.Errorf("%s does not list %d as spared and end:\n%s", kept[0], daemon, b)
				}

				// What is left has one answer: contain ps lists the
				// daemon that reap --include-daemons finds (through the
				// registry), in its session, a daemon.
				ps := run(t, o, "ps", "-o", tool, "--format", "json")
				wantCode(t, ps, 0)
				if !strings.Contains(ps.stdout, fmt.Sprintf(`"pid":%d,`, daemon)) || !strings.Contains(ps.stdout, `"state":"daemon","daemon":true,"registered":true`) || !strings.Contains(ps.stdout, `"`+value+`"`) {
					t.Errorf("contain ps -o %s does not list the daemon %d of %s as a daemon:\n%s%s", tool, daemon, value, ps.stdout, ps.stderr)
				}
				if table := run(t, o, "ps", "-o", tool); !strings.Contains(table.stdout, strconv.Itoa(daemon)) {
					t.Errorf("contain ps -o %s (table) does not list the daemon %d:\n%s%s", tool, daemon, table.stdout, table.stderr)
				}

				plain := run(t, o, "reap", "--session", value)
				wantCode(t, plain, 0)
				if want := "left alone: session " + value + " (daemon): every process is a daemon; --include-daemons reaps them"; !strings.Contains(plain.stdout, want) {
					t.Errorf("reap without --include-daemons does not say %q:\n%s%s", want, plain.stdout, plain.stderr)
				}
				time.Sleep(100 * time.Millisecond)
				if !alive(daemon) {
					t.Fatalf("a reap without --include-daemons ended the daemon %d", daemon)
				}

				args := []string{"reap", "--include-daemons", "--session", value}
				if d.byTool {
					args = []string{"reap", "--include-daemons", "-o", tool}
				}
				all := run(t, o, args...)
				wantCode(t, all, 0)
				if !reportsRow(all.stdout, value, daemon) {
					t.Errorf("%q does not report daemon %d of %s:\n%s%s", args, daemon, value, all.stdout, all.stderr)
				}
				waitFor(t, "the daemon to be reaped", 5*time.Second, func() bool { return !alive(daemon) })
				if left := regs(); len(left) > 0 {
					t.Errorf("the registry is kept after its daemon was reaped: %q", left)
				}
			})
		}
	}
}

// TestReapSparedNoneKept: a run that spared nothing, or whose spared daemon
// ended before it did, leaves no registry (without a cgroup, where the run
// keeps one from the start).
func TestReapSparedNoneKept(t *testing.T) {
	requireRoot(t, "runs as nobody")
	t.Parallel()
	dir := sharedDir(t)
	o := runOpts{asNobody: true, env: []string{"D=" + dir}}
	for _, script := range []string{
		`true`,
		fmt.Sprintf(`%s run -d -- sleep 0.2 > $D/daemon; sleep 0.6`, bin),
	} {
		res := run(t, o, "run", "--allow-daemons", "--", "sh", "-c", script)
		wantCode(t, res, 0)
		if m, _ := filepath.Glob(filepath.Join(os.TempDir(), "contain-65534*", fmt.Sprintf("session.%d.*", res.pid))); len(m) > 0 {
			t.Errorf("%q: the run kept its registry %q with nothing spared alive", script, m)
		}
	}
}

// reportsRow reports whether reap's table has a row for pid of session
// value.
func reportsRow(out, value string, pid int) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == value && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
