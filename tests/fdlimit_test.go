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

	"github.com/contain-cli/contain/internal/testtool"
)

// fdLimit is the RLIMIT_NOFILE, soft and hard, that the tests below run
// contain under: far fewer descriptors than the sessions have processes.
const fdLimit = "--nofile=64:64"

// orphanCount is how many processes each session of these tests has.
const orphanCount = 200

// nobodyCred runs a process as nobody:nogroup.
var nobodyCred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Setsid: true}

// startOrphans starts n processes tagged value (sleep, or one in ten a
// sleep that ignores SIGTERM, so that reap must come back to kill it),
// each in its own session, as nobody if asked. They are this test's
// children: it reaps them and kills what is left when it ends.
func startOrphans(t *testing.T, n int, value string, nobody bool) []int {
	t.Helper()
	env := append(withoutTag(os.Environ()), "RUNNING_PROCESS_ORIGINATOR="+value)
	pids := make([]int, 0, n)
	for i := 0; i < n; i++ {
		argv := []string{"sleep", "300"}
		if i%10 == 9 {
			argv = []string{"sh", "-c", `trap "" TERM; exec sleep 300`}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if nobody {
			cmd.SysProcAttr = nobodyCred
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting orphan %d: %v", i, err)
		}
		go cmd.Wait()
		killOnCleanup(t, cmd.Process.Pid)
		pids = append(pids, cmd.Process.Pid)
	}
	// Until each has exec'd its sleep: a shell that has not trapped TERM
	// yet would die of it too early.
	for _, pid := range pids {
		waitFor(t, "the orphans to start", 20*time.Second, func() bool {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			return string(comm) == "sleep\n"
		})
	}
	return pids
}

// limited runs contain under fdLimit, as nobody if asked, to the end.
func limited(t *testing.T, nobody bool, args ...string) result {
	t.Helper()
	testtool.Need(t, "prlimit", "util-linux")
	argv := []string{"prlimit", fdLimit, "--"}
	if nobody {
		testtool.Need(t, "setpriv", "util-linux")
		argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
	}
	cmd := exec.Command(argv[0], append(append(argv[1:], bin), args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("contain %q: %v", args, err)
		}
		res.code = ee.ExitCode()
	}
	return res
}

// TestReapUnderFDLimit: with RLIMIT_NOFILE at 64, soft and hard, contain
// reap of 200 orphans (a tenth of them ignoring SIGTERM) kills every one
// and exits 0, as root and as an unprivileged user.
func TestReapUnderFDLimit(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			tool := uniqueTool(t)
			value := fmt.Sprintf("%s:%d", tool, deadPID(t))
			pids := startOrphans(t, orphanCount, value, nobody)
			start := time.Now()
			res := limited(t, nobody, "reap", "--format", "json", "-o", tool, "-g", "300ms")
			took := time.Since(start)
			wantCode(t, res, 0)
			if left := testtool.Living(pids); len(left) > 0 {
				t.Fatalf("%d of %d orphans are alive after reap returned\nstderr: %s", len(left), len(pids), res.stderr)
			}
			out := decode[reapOutput](t, res)
			got := results(out)
			killed := 0
			for _, pid := range pids {
				switch got[pid] {
				case "ended after the first signal":
				case "killed with SIGKILL":
					killed++
				default:
					t.Errorf("PID %d: %q", pid, got[pid])
				}
			}
			if killed < orphanCount/10 {
				t.Errorf("%d killed with SIGKILL, want at least the %d that ignore SIGTERM", killed, orphanCount/10)
			}
			t.Logf("reap of %d under %s took %v", len(pids), fdLimit, took.Round(time.Millisecond))
		})
	}
}

// crash runs contain run -v, under fdLimit if asked and as nobody if
// asked, with a command that starts n background processes, kills contain
// with SIGKILL once they run, and waits for the crash guard to exit. It
// returns the processes that are still alive, the cgroup contain made (it
// may not exist), contain's and the guard's stderr, and how long the guard
// took.
func crash(t *testing.T, n int, limit, nobody bool) (left []int, cg, stderr string, took time.Duration) {
	t.Helper()
	dir := sharedDir(t)
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do sleep 300 >/dev/null 2>&1 & echo $! >> %s/pids; i=$((i+1)); done; echo $$ > %s/ready; wait`,
		n, dir, dir)
	var argv []string
	if limit {
		testtool.Need(t, "prlimit", "util-linux")
		argv = append(argv, "prlimit", fdLimit, "--")
	}
	if nobody {
		testtool.Need(t, "setpriv", "util-linux")
		argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
	}
	argv = append(argv, bin, "run", "-v", "--", "sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	// A file, not a pipe: the guard writes to it after contain has died (a
	// pipe whose reader is gone would end it with SIGPIPE).
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	readErr := func() string {
		b, _ := os.ReadFile(errFile.Name())
		return string(b)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitFor(t, "the command to start its processes", 30*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "ready"))
		return len(b) > 0
	})
	var pids []int
	b, _ := os.ReadFile(filepath.Join(dir, "pids"))
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		killOnCleanup(t, pid)
		pids = append(pids, pid)
	}
	if len(pids) != n {
		t.Fatalf("%d PIDs recorded, want %d", len(pids), n)
	}
	guard := guardPID(t, readErr)
	killOnCleanup(t, guard)
	// prlimit and setpriv exec contain: cmd's PID is contain's.
	cg = cgroupDir(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	killed := time.Now()
	waitFor(t, "the guard to exit", 20*time.Second, func() bool { return !alive(guard) })
	took = time.Since(killed)
	if _, err := os.Stat(cg); err == nil {
		// Removed when the test ends, whatever it finds.
		t.Cleanup(func() { os.Remove(cg) })
	}
	return testtool.Living(pids), cg, readErr(), took
}

// TestGuardUnderFDLimit: contain run under RLIMIT_NOFILE 64 (soft and
// hard), its command with 200 background processes, is killed with
// SIGKILL: the crash guard kills all of them, as root (with a cgroup) and
// as nobody (without).
func TestGuardUnderFDLimit(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			left, cg, stderr, took := crash(t, orphanCount, true, nobody)
			if len(left) > 0 {
				t.Fatalf("%d of %d processes are alive after the guard exited\nstderr: %s", len(left), orphanCount, stderr)
			}
			t.Logf("the guard ended %d processes in %v", orphanCount, took.Round(time.Millisecond))
			if _, err := os.Stat(cg); err == nil {
				t.Errorf("the guard left cgroup %s behind", cg)
			}
		})
	}
}

// testCgroupParent makes a directory for a test's cgroups in the test
// process's own cgroup, removed when the test ends.
func testCgroupParent(t *testing.T) string {
	t.Helper()
	own := ownCgroupDir()
	if own == "" {
		t.Fatal("no cgroup2 mount")
	}
	dir := filepath.Join(own, fmt.Sprintf("limits-test-%d", time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	return dir
}

// TestReapSessionRemovesEmptyCgroup: the empty cgroup left by contain run
// PID (killed before its guard removed it) is removed by
// contain reap --session TOOL:PID, not only by a bare reap; a reap of
// another session, or of -o TOOL (an empty group names no tool), leaves
// it.
func TestReapSessionRemovesEmptyCgroup(t *testing.T) {
	requireRoot(t, "making cgroups")
	tool := uniqueTool(t)
	pid := deadPID(t)
	cg := filepath.Join(testCgroupParent(t), fmt.Sprintf("contain-%d", pid))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	for _, args := range [][]string{{"--session", fmt.Sprintf("%s:%d", tool, deadPID(t))}, {"-o", tool}} {
		wantCode(t, run(t, runOpts{}, append([]string{"reap"}, args...)...), 0)
		if _, err := os.Stat(cg); err != nil {
			t.Fatalf("reap %q removed the cgroup of another session: %v", args, err)
		}
	}
	value := fmt.Sprintf("%s:%d", tool, pid)
	res := run(t, runOpts{}, "reap", "-n", "--session", value)
	wantCode(t, res, 0)
	if !strings.Contains(res.stdout, cg) || !strings.Contains(res.stdout, "would remove (it is empty)") {
		t.Errorf("the dry run does not name the cgroup:\n%s", res.stdout)
	}
	res = run(t, runOpts{}, "reap", "--format", "json", "--session", value)
	wantCode(t, res, 0)
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Fatalf("the empty cgroup is still there (%v):\n%s", err, res.stdout)
	}
	out := decode[reapOutput](t, res)
	if len(out.Cgroups) != 1 || out.Cgroups[0].Dir != cg || out.Cgroups[0].Result != "removed (it was empty)" || out.Cgroups[0].Failed {
		t.Errorf("cgroups in the report: %+v", out.Cgroups)
	}
}

// TestCommandKeepsNofile: COMMAND runs under the RLIMIT_NOFILE soft limit
// that contain was given, not the one the Go runtime raises contain's own
// to: as root (started by contain), as nobody (started by the built-in
// keeper, and by the shim as a Go program), and with the crash guard's
// waiter and the keeper started either way.
func TestCommandKeepsNofile(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "prlimit", "util-linux")
	for _, c := range []struct {
		name   string
		nobody bool
		env    []string
	}{
		{"root", false, nil},
		{"root, no built-in waiter", false, []string{"CONTAIN_DISABLE=waiter"}},
		{"nobody", true, nil},
		{"nobody, shim as contain __shim", true, []string{"CONTAIN_DISABLE=keeper"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.nobody {
				requireRoot(t, "switching to nobody")
			}
			argv := []string{"prlimit", "--nofile=100:4096", "--"}
			if c.nobody {
				argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
			}
			argv = append(argv, bin, "run", "--", "sh", "-c", "ulimit -Sn; ulimit -Hn")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.Fields(withoutDisableLines(string(out))); len(got) != 2 || got[0] != "100" || got[1] != "4096" {
				t.Errorf("COMMAND's soft and hard RLIMIT_NOFILE: %q, want 100 and 4096", out)
			}
		})
	}
}
