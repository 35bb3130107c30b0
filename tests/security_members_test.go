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

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// A tag is a claim any process can make of itself. These tests have
// another user's process carry a run's tag, RUNNING_PROCESS_ORIGINATOR=
// CONTAIN:<the run's PID>, and check that it does not join the run: it is
// not ended with the group, not counted in its limits, and not moved out
// of its own cgroup as a daemon. Each pair of users is tried: root's run
// and nobody's process, and nobody's run and a process of daemon (uid 1).

// user is an account a test process runs as: "" for the test's own.
type user struct{ name, group string }

var (
	rootUser   = user{}
	nobodyUser = user{"nobody", "nogroup"}
	daemonUser = user{"daemon", "daemon"}
)

func (u user) String() string {
	if u.name == "" {
		return "root"
	}
	return u.name
}

// argv prefixes argv with setpriv to u.
func (u user) argv(t *testing.T, argv ...string) []string {
	if u.name == "" {
		return argv
	}
	testtool.Need(t, "setpriv", "util-linux")
	return append([]string{"setpriv", "--reuid=" + u.name, "--regid=" + u.group, "--clear-groups", "--"}, argv...)
}

// startTaggedAs starts argv as u, in a session of its own, carrying
// value as its tag (and env), and ends it when the test ends.
func startTaggedAs(t *testing.T, u user, value string, env []string, argv ...string) int {
	t.Helper()
	// The tag is given by env(1), once setpriv has become u: a process of
	// root's that carries the tag is root's own claim, and a scan between
	// setpriv's start and its exec would rightly take it.
	argv = u.argv(t, append([]string{"env", "RUNNING_PROCESS_ORIGINATOR=" + value}, append(env, argv...)...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = withoutTag(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	pid := cmd.Process.Pid
	// What it started is in its session: end that too, while its leader
	// (pinned: its PID may come round to another process) still runs and
	// so holds the group's ID.
	leader, pinErr := unix.PidfdOpen(pid, 0)
	t.Cleanup(func() {
		if pinErr != nil {
			return
		}
		defer unix.Close(leader)
		if unix.PidfdSendSignal(leader, 0, nil, 0) == nil {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		unix.PidfdSendSignal(leader, unix.SIGKILL, nil, 0)
	})
	waitFor(t, "the tagged process to start", 10*time.Second, func() bool {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return len(comm) > 0 && string(comm) != "setpriv\n" && string(comm) != "env\n"
	})
	return pid
}

// TestTagOfAnotherUserJoinsNothing: a process of another user that
// carries a run's tag is not ended with the run's group, nor by its crash
// guard when contain is killed. Before the fix the tracker took any
// readable process carrying the tag (where it is the only layer: macOS, or
// Linux with the others turned off), and the guard of root's crashed run
// chose every process that carried the tag: both sent SIGTERM to nobody's
// process. (An ordinary user's run cannot read another user's environment:
// the nobody case shows that path keeps to its own.)
func TestTagOfAnotherUserJoinsNothing(t *testing.T) {
	t.Parallel()
	requireRoot(t, "switches users")
	for _, c := range []struct {
		run, other user
		disable    string
		crash      bool
	}{
		{rootUser, nobodyUser, "", false},
		{rootUser, nobodyUser, "cgroup,subreaper,shim", false},
		{rootUser, nobodyUser, "", true},
		{rootUser, nobodyUser, "cgroup", true},
		{nobodyUser, daemonUser, "subreaper,shim", false},
		{nobodyUser, daemonUser, "", true},
	} {
		name := fmt.Sprintf("%s's run, %s's process, CONTAIN_DISABLE=%s", c.run, c.other, c.disable)
		if c.crash {
			name += ", contain killed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			o := runOpts{asNobody: c.run == nobodyUser}
			if c.disable != "" {
				o.env = []string{"CONTAIN_DISABLE=" + c.disable}
			}
			cmd, stderr, wait := startContainLive(t, o, "run", "-v", "--", "sh", "-c",
				"echo $$ > "+dir+"/ready; while [ ! -e "+dir+"/go ]; do sleep 0.05; done")
			waitReady(t, dir)
			value := "CONTAIN:" + strconv.Itoa(cmd.Process.Pid)
			intruder := startTaggedAs(t, c.other, value, nil, "sleep", "300")
			// Let a scan see it, then end COMMAND, or contain.
			time.Sleep(300 * time.Millisecond)
			if c.crash {
				guard := guardPID(t, stderr)
				cmd.Process.Kill()
				wait()
				waitFor(t, "the crash guard to end", 15*time.Second, func() bool { return !alive(guard) })
				os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
			} else {
				os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
				wantCode(t, wait(), 0)
			}
			if !alive(intruder) {
				t.Fatalf("%s's process %d, tagged %s, was ended with %s's group\nstderr:\n%s", c.other, intruder, value, c.run, stderr())
			}
			if strings.Contains(stderr(), " "+strconv.Itoa(intruder)+" ") {
				t.Errorf("-v names %s's process %d:\n%s", c.other, intruder, stderr())
			}
		})
	}
}

// TestTagOfAnotherUserIsNotCounted: a sampled --memory limit counts only
// the run's members. Before the fix root's run (and nobody's) exited 137
// because another user's tagged 100 MiB process was counted.
func TestTagOfAnotherUserIsNotCounted(t *testing.T) {
	t.Parallel()
	requireRoot(t, "switches users")
	for _, c := range []struct{ run, other user }{
		{rootUser, nobodyUser},
		{nobodyUser, daemonUser},
	} {
		t.Run(fmt.Sprintf("%s's run, %s's process", c.run, c.other), func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			o := runOpts{asNobody: c.run == nobodyUser, env: []string{"CONTAIN_DISABLE=cgroup"}}
			cmd, stderr, wait := startContainLive(t, o, "run", "-v", "--memory", "64M", "--", "sh", "-c",
				"echo $$ > "+dir+"/ready; while [ ! -e "+dir+"/go ]; do sleep 0.05; done")
			waitReady(t, dir)
			value := "CONTAIN:" + strconv.Itoa(cmd.Process.Pid)
			hogPID := startTaggedAs(t, c.other, value, nil, hog, "mem", "25", "100")
			// 100 MiB and more, for a second: well over the limit, seen by
			// several samples.
			// (Before the fix, contain ended it as soon as it was counted.)
			waitFor(t, "the hog to use 100 MiB", 20*time.Second, func() bool { return rssMiB(hogPID) >= 100 || !alive(hogPID) })
			time.Sleep(time.Second)
			syscall.Kill(hogPID, syscall.SIGKILL)
			os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
			res := wait()
			if res.code != 0 {
				t.Fatalf("exit status %d, want 0: %s's tagged hog counted in %s's limit\nstderr:\n%s", res.code, c.other, c.run, stderr())
			}
		})
	}
}

// rssMiB is pid's resident memory in MiB (0 when it cannot be read).
func rssMiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.Atoi(f[0])
				return kb >> 10
			}
		}
	}
	return 0
}

// TestTaggedDaemonOutsideTheCgroupIsNotMoved: with --allow-daemons, root's
// run moves a spared daemon out of its cgroup, and only out of its own:
// a tagged process in a cgroup of its own, and the marked child it forks,
// stay where they are. Before the fix root's run moved nobody's marked
// child into root's cgroup, out of the one it was confined to; a process
// of root's own that carries the tag is not moved either.
func TestTaggedDaemonOutsideTheCgroupIsNotMoved(t *testing.T) {
	t.Parallel()
	requireRoot(t, "writes cgroups")
	own := ownCgroupDir()
	if own == "" {
		t.Skip("no cgroup2 mount")
	}
	for _, other := range []user{nobodyUser, rootUser} {
		t.Run(other.String()+"'s process", func(t *testing.T) {
			t.Parallel()
			cg := filepath.Join(own, fmt.Sprintf("contain-test-confined-%d-%s", os.Getpid(), other))
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Skipf("cannot make a test cgroup: %v", err)
			}
			t.Cleanup(func() {
				for i := 0; i < 100 && os.Remove(cg) != nil; i++ {
					time.Sleep(20 * time.Millisecond)
				}
			})
			dir := sharedDir(t)
			cmd, stderr, wait := startContainLive(t, runOpts{}, "run", "-v", "--allow-daemons", "--", "sh", "-c",
				"echo $$ > "+dir+"/ready; while [ ! -e "+dir+"/go ]; do sleep 0.05; done")
			waitReady(t, dir)
			value := "CONTAIN:" + strconv.Itoa(cmd.Process.Pid)
			// It waits to be moved into the test's cgroup, then forks the
			// marked child there.
			sh := startTaggedAs(t, other, value, nil, "sh", "-c",
				"while [ ! -e "+dir+"/moved ]; do sleep 0.02; done; RUNNING_PROCESS_IS_DAEMON=1 sleep 300 & echo $! > "+dir+"/daemon; wait")
			if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(sh)), 0); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "moved"), nil, 0o644)
			d := readPID(t, dir, "daemon")
			killOnCleanup(t, d)
			time.Sleep(500 * time.Millisecond) // scans judge it
			os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
			res := wait()
			wantCode(t, res, 0)
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", d))
			if err != nil {
				t.Fatalf("the marked child %d is gone: %v\nstderr:\n%s", d, err, stderr())
			}
			if !strings.Contains(string(b), "0::"+strings.TrimPrefix(cg, cgroupMount(cg))+"\n") {
				t.Fatalf("root's run moved %s's marked child %d out of %s: now %s\nstderr:\n%s", other, d, cg, b, res.stderr)
			}
			if other != rootUser && !alive(sh) {
				t.Errorf("%s's tagged sh %d was ended", other, sh)
			}
		})
	}
}

// cgroupMount is the part of dir, a cgroup directory, that is the
// cgroup2 mount.
func cgroupMount(dir string) string {
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if strings.HasPrefix(dir, m+"/") {
			return m
		}
	}
	return ""
}
