//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// daemonScript starts, inside the outer run, a daemon with contain run -d
// (its PID in dir/daemon) and an ordinary setsid escapee (dir/escapee).
func daemonScript(dir string) string {
	return fmt.Sprintf(`%s run -d -- sleep 300 > %s/daemon; setsid sleep 300 & echo $! > %s/escapee; sleep 0.3`, bin, dir, dir)
}

// daemonSession is the tag the daemon carries: its own session, that of
// the contain run -d that started it.
func daemonSession(t *testing.T, pid int) string {
	t.Helper()
	v := environOf(t, pid)["RUNNING_PROCESS_ORIGINATOR"]
	if v == "" || environOf(t, pid)["RUNNING_PROCESS_IS_DAEMON"] != "1" {
		t.Fatalf("daemon %d: tag %q, want a tag and the daemon mark", pid, v)
	}
	return v
}

// TestAllowDaemons: a daemon started with contain run -d inside a run
// with --allow-daemons outlives it, is listed as spared, is shown by ps and
// spared by a plain reap, and is reaped with --include-daemons; the
// escapee beside it is not spared.
func TestAllowDaemons(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			rep := filepath.Join(dir, "report.json")
			res := run(t, m.o, "run", "--allow-daemons", "-v", "--report", rep, "--", "sh", "-c", daemonScript(dir))
			wantCode(t, res, 0)
			daemon, escapee := readPID(t, dir, "daemon"), readPID(t, dir, "escapee")
			killOnCleanup(t, daemon)
			killOnCleanup(t, escapee)
			if alive(escapee) {
				t.Errorf("the escapee %d outlived the run", escapee)
			}
			if !alive(daemon) {
				t.Fatalf("the daemon %d did not outlive the run; stderr:\n%s", daemon, res.stderr)
			}
			if !strings.Contains(res.stderr, fmt.Sprintf("sparing %d (sleep)", daemon)) {
				t.Errorf("-v does not say the daemon was spared:\n%s", res.stderr)
			}
			r := readReport(t, rep)
			spared := false
			for _, l := range r.Leftovers {
				if l.PID == daemon {
					spared = l.Spared && l.Daemon && l.EndedBy == "spared (--allow-daemons)"
				}
				if l.PID == escapee && l.Spared {
					t.Errorf("the escapee is reported spared: %+v", l)
				}
			}
			if !spared {
				t.Errorf("the report does not list daemon %d as spared: %+v", daemon, r.Leftovers)
			}
			if m.o.env == nil && !m.o.asNobody {
				// Root: out of the run's cgroup, which is gone.
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", daemon)); err != nil || strings.Contains(string(b), "contain-") {
					t.Errorf("the daemon's cgroup: %q (%v)", b, err)
				}
			}
			value := daemonSession(t, daemon)
			ps := run(t, m.o, "ps", "--format", "json")
			wantCode(t, ps, 0)
			if !psShows(t, ps.stdout, daemon, "daemon") {
				t.Errorf("ps does not show daemon %d as a daemon:\n%s", daemon, ps.stdout)
			}
			wantCode(t, run(t, m.o, "reap", "--session", value), 0)
			if !alive(daemon) {
				t.Fatalf("a reap without --include-daemons ended the daemon %d", daemon)
			}
			wantCode(t, run(t, m.o, "reap", "--include-daemons", "--session", value), 0)
			waitFor(t, "the daemon to be reaped", 5*time.Second, func() bool { return !alive(daemon) })
		})
	}
}

// psShows reports whether ps's JSON lists pid in state.
func psShows(t *testing.T, out string, pid int, state string) bool {
	t.Helper()
	var doc struct {
		Sessions []struct {
			State     string `json:"state"`
			Processes []struct {
				PID int `json:"pid"`
			} `json:"processes"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("ps --format json: %v\n%s", err, out)
	}
	for _, s := range doc.Sessions {
		for _, p := range s.Processes {
			if p.PID == pid {
				return s.State == state
			}
		}
	}
	return false
}

// TestClaimSocketBeforeCommand: with --allow-daemons, the socket on which
// contain run -d claims its daemon is there from COMMAND's first instant,
// so that a contain run -d that COMMAND runs at once finds it. It was
// bound only once the run had started: with four runs at a time, COMMAND
// found no socket in 41 runs of 240, and the daemon of such a run went
// unclaimed and was ended with the group (TestReapSpared, one subtest in
// a hundred).
func TestClaimSocketBeforeCommand(t *testing.T) {
	t.Parallel()
	users := []runOpts{{}}
	if os.Geteuid() == 0 {
		users = append(users, runOpts{asNobody: true})
	}
	for _, o := range users {
		t.Run(fmt.Sprintf("nobody=%v", o.asNobody), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			missed, runs := 0, 0
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 25 {
						// COMMAND connects to it at once (a connect, not a
						// read of /proc/net/unix, which can skip a line
						// while sockets come and go).
						res := run(t, o, "run", "--allow-daemons", "--", hog, "claimsocket")
						mu.Lock()
						runs++
						if res.code != 0 {
							missed++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if missed > 0 {
				t.Errorf("COMMAND found no claim socket in %d runs of %d", missed, runs)
			}
		})
	}
}

// TestDaemonsNotAllowed: without --allow-daemons nothing survives, and -v
// says which option would have spared the daemon.
func TestDaemonsNotAllowed(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			rep := filepath.Join(dir, "report.json")
			res := run(t, m.o, "run", "-v", "--report", rep, "--", "sh", "-c", daemonScript(dir))
			wantCode(t, res, 0)
			daemon := readPID(t, dir, "daemon")
			killOnCleanup(t, daemon)
			if alive(daemon) {
				t.Fatalf("the daemon %d outlived a run without --allow-daemons", daemon)
			}
			want := fmt.Sprintf("%d (sleep) is marked RUNNING_PROCESS_IS_DAEMON=1: ending it with the group (contain run --allow-daemons would have spared it)", daemon)
			if !strings.Contains(res.stderr, want) {
				t.Errorf("-v does not say %q:\n%s", want, res.stderr)
			}
			for _, l := range readReport(t, rep).Leftovers {
				if l.PID == daemon && (!l.Daemon || l.Spared) {
					t.Errorf("report: %+v, want daemon, not spared", l)
				}
			}
		})
	}
}

// TestDaemonMarkedLater: a process first seen without the mark is not
// spared when it execs with it later; one started with the mark is. Over
// rounds, as the scans may catch either before its exec.
func TestDaemonMarkedLater(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			for round := 0; round < 5; round++ {
				dir := sharedDir(t)
				script := fmt.Sprintf(`env CONTAIN_TEST_OWN=1 sh -c 'echo $$ > %[1]s/late; sleep 0.5; exec env RUNNING_PROCESS_IS_DAEMON=1 sleep 300' &
RUNNING_PROCESS_IS_DAEMON=1 setsid sleep 300 >/dev/null 2>&1 & echo $! > %[1]s/marked
sleep 1`, dir)
				res := run(t, m.o, "run", "--allow-daemons", "-v", "--", "sh", "-c", script)
				wantCode(t, res, 0)
				late, marked := readPID(t, dir, "late"), readPID(t, dir, "marked")
				killOnCleanup(t, late)
				killOnCleanup(t, marked)
				if alive(late) {
					t.Fatalf("round %d: %d, marked only after it was first seen, outlived the run:\n%s", round, late, res.stderr)
				}
				if !strings.Contains(res.stderr, fmt.Sprintf("%d (sleep) carries RUNNING_PROCESS_IS_DAEMON=1 but did not when contain first saw it", late)) {
					t.Errorf("round %d: -v does not say why %d was ended:\n%s", round, late, res.stderr)
				}
				if !alive(marked) {
					t.Fatalf("round %d: %d, marked from its start, did not outlive the run:\n%s", round, marked, res.stderr)
				}
				syscall.Kill(marked, syscall.SIGKILL)
			}
		})
	}
}

// TestAllowDaemonsCrash: contain killed with SIGKILL: the guard (or the
// shim) ends the session and spares the daemon.
func TestAllowDaemonsCrash(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			script := fmt.Sprintf(`%s run -d -- sleep 300 > %s/daemon; setsid sleep 300 & echo $! > %s/escapee; sleep 300`, bin, dir, dir)
			cmd, stderr, wait := startContainLive(t, m.o, "run", "--allow-daemons", "-v", "--", "sh", "-c", script)
			waitFor(t, "the escapee", 10*time.Second, func() bool { b, _ := os.ReadFile(filepath.Join(dir, "escapee")); return len(b) > 0 })
			daemon, escapee := readPID(t, dir, "daemon"), readPID(t, dir, "escapee")
			killOnCleanup(t, daemon)
			killOnCleanup(t, escapee)
			waitFor(t, "the daemon to be spared", 10*time.Second, func() bool {
				return strings.Contains(stderr(), "sparing "+strconv.Itoa(daemon)+" ")
			})
			cmd.Process.Signal(syscall.SIGKILL)
			wait()
			waitFor(t, "the escapee to be ended", 10*time.Second, func() bool { return !alive(escapee) })
			time.Sleep(500 * time.Millisecond)
			if !alive(daemon) {
				t.Fatalf("the daemon %d did not outlive contain's crash; stderr:\n%s", daemon, stderr())
			}
			wantCode(t, run(t, m.o, "reap", "--include-daemons", "--session", daemonSession(t, daemon)), 0)
		})
	}
}

// TestAllowDaemonsRealDaemon: redis-server, which writes its process title
// over its environment, started with contain run -d inside an
// --allow-daemons run, still answers after the run.
func TestAllowDaemonsRealDaemon(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "redis-server", "redis-server")
	testtool.Need(t, "redis-cli", "redis-tools")
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			sock := filepath.Join(dir, "redis.sock")
			script := fmt.Sprintf(`%s run -d -- redis-server --port 0 --unixsocket %s --dir %s --logfile /dev/null --save '' > %s/daemon; sleep 0.5`, bin, sock, dir, dir)
			res := run(t, m.o, "run", "--allow-daemons", "-v", "--", "sh", "-c", script)
			wantCode(t, res, 0)
			daemon := readPID(t, dir, "daemon")
			killOnCleanup(t, daemon)
			waitFor(t, "redis to answer", 5*time.Second, func() bool {
				out, _ := exec.Command("redis-cli", "-s", sock, "ping").Output()
				return strings.TrimSpace(string(out)) == "PONG"
			})
			if !alive(daemon) {
				t.Errorf("redis %d is not the daemon that answers", daemon)
			}
			// redis has written its title over its environment: no tag is
			// left to find it by (ps and reap say so); the test ends it.
		})
	}
}
