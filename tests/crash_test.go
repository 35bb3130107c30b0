//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"

	"golang.org/x/sys/unix"
)

// crashKinds are what must not survive a crash; untagged dropped the tag
// but stayed in COMMAND's process group.
var crashKinds = []string{"background", "setsid", "doublefork", "ignoresterm", "untagged"}

// crashTree starts crashKinds and more, writes their PIDs, then COMMAND's
// to dir/ready, and waits, as a long-running COMMAND does.
func crashTree(dir string, more ...string) string {
	return escapeeTree(dir, slices.Concat(crashKinds, more)...) + "echo $$ > $D/ready\nwait\n"
}

// guardPID finds the guard's PID in contain's verbose output.
func guardPID(t *testing.T, stderr func() string) int {
	t.Helper()
	re := regexp.MustCompile(`crash guard: PID (\d+)`)
	var m []string
	waitFor(t, "the crash guard to start", 10*time.Second, func() bool {
		m = re.FindStringSubmatch(stderr())
		return m != nil
	})
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// TestCrashLeavesNothing kills contain with SIGKILL while its command runs
// a background job, a setsid escapee, a double-forked process, one that
// ignores SIGTERM and one that dropped the tag: within a second nothing of
// the group is left, with a cgroup (root) and without (nobody: the shim,
// as the built-in keeper and as contain __shim).
func TestCrashLeavesNothing(t *testing.T) {
	yes, no := true, false
	modes := []struct {
		name       string
		nobody     bool
		wantCgroup *bool    // nil: whichever this user may have
		env        []string // added to contain's environment
	}{{"root with cgroup", false, &yes, nil}, {"nobody without cgroup", true, &no, nil},
		{"nobody without cgroup, contain __shim", true, &no, []string{"CONTAIN_DISABLE=keeper"}}}
	if os.Geteuid() != 0 {
		// Root runs both paths; anyone else runs the one they have.
		modes = modes[:1]
		modes[0].name, modes[0].wantCgroup = "unprivileged", nil
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			cmd, stderr, wait := startContainLive(t, runOpts{asNobody: m.nobody, env: m.env}, "run", "-v", "--", "sh", "-c", crashTree(dir))
			waitFor(t, "the tree to be ready", 10*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "ready"))
				return len(b) > 0
			})
			pids := map[string]int{"command": readPID(t, dir, "ready")}
			for _, kind := range crashKinds {
				pids[kind] = readPID(t, dir, kind)
			}
			for _, pid := range pids {
				killOnCleanup(t, pid)
			}
			guard := guardPID(t, stderr)
			killOnCleanup(t, guard)
			value := fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid)
			checkGuard(t, guard, value)
			cg := cgroupDir(cmd.Process.Pid)
			_, err := os.Stat(cg)
			hasCgroup := err == nil
			if m.wantCgroup != nil && hasCgroup != *m.wantCgroup {
				t.Fatalf("cgroup %s: %v, want one: %v", cg, err, *m.wantCgroup)
			}

			killAndWaitGone(t, cmd, wait, pids, value)
			if hasCgroup {
				waitFor(t, "the cgroup to be removed", time.Second, func() bool {
					_, err := os.Stat(cg)
					return os.IsNotExist(err)
				})
			}
			waitFor(t, "the guard to exit", 2*time.Second, func() bool { return !alive(guard) })
		})
	}
}

// killAndWaitGone kills contain with SIGKILL and waits for every process
// of pids, and of the session value, to die within the second the SPEC
// allows.
func killAndWaitGone(t *testing.T, cmd *exec.Cmd, wait func() result, pids map[string]int, value string) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	wait()
	waitFor(t, "every process of the group to die", time.Second, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return len(tagged(value)) == 0
	})
	t.Logf("all gone %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// checkGuard: the guard runs in a session of its own (a kill of contain's
// process group spares it) and is no member of the session it guards.
func checkGuard(t *testing.T, guard int, value string) {
	t.Helper()
	sid, err := unix.Getsid(guard)
	if err != nil || sid != guard {
		t.Errorf("guard %d: session %d (%v), want its own", guard, sid, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", guard))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "RUNNING_PROCESS_ORIGINATOR="+value) {
		t.Errorf("the guard carries the session's tag %s", value)
	}
	out := decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json", "-o", "CONTAIN"))
	if _, pids := sessionState(out, value); len(pids) == 0 {
		t.Errorf("ps does not list session %s: %+v", value, out)
	} else {
		for _, pid := range pids {
			if pid == guard {
				t.Errorf("ps lists the guard %d as a member of %s", guard, value)
			}
		}
	}
}

// TestGuardEndsWithTheRun: a normal run leaves no guard behind.
func TestGuardEndsWithTheRun(t *testing.T) {
	res := run(t, runOpts{}, "run", "-v", "--", "sleep", "0.2")
	wantCode(t, res, 0)
	m := regexp.MustCompile(`crash guard: PID (\d+)`).FindStringSubmatch(res.stderr)
	if m == nil {
		t.Fatalf("no crash guard named in:\n%s", res.stderr)
	}
	pid, _ := strconv.Atoi(m[1])
	if exists(pid) {
		t.Fatalf("the guard %d outlived the run", pid)
	}
}

// TestGuardReapedBeforeExit: contain reaps its crash guard before it exits,
// also where it ends the guard as soon as COMMAND is reaped (a plain run
// with a cgroup, as root: no -v, no report), so that no guard is ever left
// to an outer contain run, a subreaper, to adopt. The outer one says (-v)
// what it adopts; 40 inner runs of true, as root and as nobody. As nobody
// without the shim (CONTAIN_DISABLE=shim, which the inner runs inherit):
// with it, the shim would adopt, and say nothing.
func TestGuardReapedBeforeExit(t *testing.T) {
	modes := []runOpts{{}}
	if os.Geteuid() == 0 {
		modes = append(modes, runOpts{asNobody: true, env: []string{"CONTAIN_DISABLE=shim"}})
	}
	for _, o := range modes {
		res := run(t, o, "run", "-v", "--", "sh", "-c",
			`i=0; while [ $i -lt 40 ]; do "$0" run -- true || exit 1; i=$((i+1)); done`, bin)
		wantCode(t, res, 0)
		if strings.Contains(res.stderr, "adopted") {
			t.Errorf("nobody=%v: the outer contain adopted what an inner one left:\n%s", o.asNobody, res.stderr)
		}
	}
}

// TestStopAsCommandEnds: a stop request that comes as COMMAND ends (here
// COMMAND sends contain SIGTERM and exits) never leaves contain waiting
// for a cgroup to freeze that the reaper has removed meanwhile (the main
// loop freezes the group to signal it while the reaper, COMMAND reaped,
// removes it). Before the fix, 18 of 60 such runs took 3 s.
func TestStopAsCommandEnds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the race is with the run's own cgroup")
	}
	for i := 0; i < 40; i++ {
		began := time.Now()
		res := run(t, runOpts{}, "run", "--", "sh", "-c", "kill -TERM $PPID; exit 0")
		took := time.Since(began)
		if res.code != 0 && res.code != 128+int(syscall.SIGTERM) {
			t.Fatalf("round %d: exit status %d\nstderr: %s", i, res.code, res.stderr)
		}
		if took > 2*time.Second {
			t.Fatalf("round %d took %v: contain waited for a removed cgroup to freeze", i, took)
		}
	}
}

// TestCrashDuringClose: contain killed while it closes the group (a
// leftover that ignores SIGTERM, a long grace period): the guard finishes
// the job within a second.
func TestCrashDuringClose(t *testing.T) {
	dir := sharedDir(t)
	cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "-v", "-g", "30s", "--", "sh", "-c",
		`sh -c 'trap "" TERM; echo $$ > `+dir+`/stubborn; exec sleep 300' & while [ ! -s `+dir+`/stubborn ]; do sleep 0.01; done`)
	guard := guardPID(t, stderr)
	killOnCleanup(t, guard)
	waitFor(t, "contain to close the group", 10*time.Second, func() bool {
		return strings.Contains(stderr(), "SIGTERM to leftover")
	})
	stubborn := readPID(t, dir, "stubborn")
	killOnCleanup(t, stubborn)
	cmd.Process.Signal(syscall.SIGKILL)
	wait()
	waitFor(t, "the leftover to die", time.Second, func() bool { return !alive(stubborn) })
}

// TestCrashWindow kills contain with SIGKILL at many moments in the first
// milliseconds after it started, while COMMAND forks a background job, a
// setsid escapee and a double-forked process at once: in no round may
// anything of the session (or its cgroup) outlive contain by more than a
// second. Before the guard was started ahead of COMMAND, 2 to 7 rounds in
// 60 left processes, and more left an empty cgroup.
func TestCrashWindow(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	type mode struct {
		name   string
		nobody bool
		env    []string
	}
	// nobody's shim: the built-in keeper, and contain __shim.
	modes := []mode{{"root", false, nil}, {"nobody", true, nil}, {"nobody, contain __shim", true, []string{"CONTAIN_DISABLE=keeper"}}}
	if os.Geteuid() != 0 {
		modes = []mode{{"unprivileged", false, nil}}
	}
	script := `sleep 300 & setsid sleep 300 & sh -c 'sleep 300 &' & sleep 300`
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.nobody {
				testtool.Need(t, "setpriv", "util-linux")
			}
			var left []string
			for i := range rounds {
				cmd := containCmd(runOpts{asNobody: m.nobody, env: m.env}, "run", "--", "sh", "-c", script)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// A contain-PID cgroup there already is another run's, whose
				// PID this one reused (PIDs wrap at 32768 here; some tests
				// leave a dead run's cgroup for a moment on purpose): its
				// cgroup is not this round's to check. contain itself makes
				// its cgroup only after its runtime has started.
				cg := cgroupDir(cmd.Process.Pid)
				_, err := os.Stat(cg)
				stale := cg != "" && err == nil
				// 0 to 12 ms after the start, spread over the rounds.
				delay := time.Duration(i*173%12000) * time.Microsecond
				time.Sleep(delay)
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				pid := cmd.Process.Pid
				value := fmt.Sprintf("CONTAIN:%d", pid) // setpriv execs contain: same PID
				deadline := time.Now().Add(time.Second)
				for {
					procs := tagged(value)
					_, err := os.Stat(cg)
					cgLeft := cg != "" && err == nil && !stale
					if len(procs) == 0 && !cgLeft {
						break
					}
					if time.Now().After(deadline) {
						left = append(left, fmt.Sprintf("round %d (kill after %v): processes %v, cgroup left: %v",
							i, delay, procs, cgLeft))
						for _, p := range procs {
							syscall.Kill(p, syscall.SIGKILL)
						}
						if cgLeft {
							os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
							time.Sleep(50 * time.Millisecond)
							os.Remove(cg)
						}
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			t.Logf("%d of %d early kills left something for more than a second", len(left), rounds)
			if len(left) > 0 {
				t.Fatalf("left behind:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

// TestGuardWaitingItself: where there is no /bin/sh, contain __guard is
// started directly and waits on the pipe itself; on EOF it reaps the
// session its orders name (here one whose contain is long gone), and it
// does nothing when no session line came.
func TestGuardWaitingItself(t *testing.T) {
	for _, orders := range []string{"", "session %s 300ms false\ncomm"} {
		gone := deadPID(t)
		value := fmt.Sprintf("%s:%d", uniqueTool(t), gone)
		victim := startTagged(t, value, procOpts{})
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		guard := exec.Command(bin, "__guard", strconv.Itoa(gone))
		guard.ExtraFiles = []*os.File{r}
		if err := guard.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if orders != "" {
			fmt.Fprintf(w, orders, value)
		}
		w.Close() // as when contain dies
		if err := guard.Wait(); err != nil {
			t.Fatalf("guard: %v", err)
		}
		if orders == "" && !alive(victim) {
			t.Fatalf("a guard without orders killed %d", victim)
		}
		if orders != "" && alive(victim) {
			t.Fatalf("the guard left %d of session %s alive", victim, value)
		}
	}
}

// TestGuardOutlivesItsBinary: the guard waits for hours, maybe while an
// upgrade removes the binary it runs from; it was handed that binary
// open, so it still reaps the session after a crash.
func TestGuardOutlivesItsBinary(t *testing.T) {
	dir := sharedDir(t)
	copied := filepath.Join(dir, "contain-copy")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copied, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copied, "run", "-v", "--", "sh", "-c", "echo $$ > "+dir+"/ready; sleep 300 & echo $! > "+dir+"/job; wait")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second // a survivor would hold stderr open
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the command", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "job"))
		return len(b) > 0
	})
	job := readPID(t, dir, "job")
	killOnCleanup(t, job)
	guard := guardPID(t, stderr.String)
	killOnCleanup(t, guard)
	if err := os.Remove(copied); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, "the background job to be reaped by the guard", 2*time.Second, func() bool { return !alive(job) })
}

// TestGuardIgnoresForwardedSignals: the waiting guard ignores every
// signal contain forwards (an outer contain run forwards them to it, a
// member of its group), the seldom ones and the real-time ones included.
func TestGuardIgnoresForwardedSignals(t *testing.T) {
	dir := t.TempDir()
	cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "-v", "--", "sh", "-c", "echo > "+dir+"/ready; sleep 300")
	waitReady(t, dir)
	guard := guardPID(t, stderr)
	killOnCleanup(t, guard)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPWR, syscall.SIGXCPU,
		syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGUSR1, 35, 40, 64} {
		syscall.Kill(guard, sig)
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(guard) {
		t.Fatalf("the guard %d died of a forwarded signal", guard)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	wait()
}
