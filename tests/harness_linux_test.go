//go:build linux

package tests

// Linux's part of the harness (harness_test.go): what the tests need
// beside contain (hog, setsid, Wine), the check every run of contain gets
// (checkRun), and what the tests read of processes and cgroups.

import (
	"bytes"
	"flag"
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

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// hog is the tests' resource hog (testdata/hog), built beside contain.
var hog string

// prepare builds, beside contain in dir, hog and, where it is missing,
// setsid, and starts preparing Wine (runTests); end stops Wine.
func prepare(dir string) (end func(), err error) {
	hog = filepath.Join(dir, "hog")
	if err := goBuild(hog, ".", "./testdata/hog"); err != nil {
		return nil, fmt.Errorf("building hog: %v", err)
	}
	// The scripts' setsid(1): util-linux's, else (a machine with only Go,
	// sh and coreutils) testdata/setsid, which does the same, on PATH.
	if _, err := exec.LookPath("setsid"); err != nil {
		tools := filepath.Join(dir, "tools")
		if err := goBuild(filepath.Join(tools, "setsid"), ".", "./testdata/setsid"); err != nil {
			return nil, fmt.Errorf("building setsid: %v", err)
		}
		os.Setenv("PATH", tools+string(os.PathListSeparator)+os.Getenv("PATH"))
		standInSetsid = true
	}
	// A whole run prepares Wine (builds the Windows binaries, boots the
	// prefix) while the first tests run: the tests that need it wait for
	// it then, not before.
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
		go wine.once.Do(setUpWine)
		return func() {
			wine.once.Do(func() {}) // done before endWine
			endWine()
		}, nil
	}
	return endWine, nil
}

// setsid runs its arguments in a new session (escapeeLine): setsid(1),
// util-linux's or its stand-in.
const setsid = "setsid "

// standInSetsid: setsid(1) is testdata/setsid, util-linux's is not
// installed.
var standInSetsid bool

// needRealSetsid skips a test that sends SIGTERM to a setsid started with
// it ignored: the stand-in, a Go program, has SIGTERM's default action
// for the moment its runtime starts, before it ignores it again.
func needRealSetsid(t *testing.T) {
	t.Helper()
	if standInSetsid {
		testtool.Missing(t, "setsid is not installed (Debian package util-linux); testdata/setsid stands in, but not for a setsid that must ignore SIGTERM from its first instant")
	}
}

// requireRoot skips tests that must switch users or write cgroups; CI runs
// as root, so there they always run.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s", why)
	}
}

// sharedDir makes a temporary directory that nobody can write to as well.
func sharedDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parent is 0700 on some Go versions: open it up for the
	// unprivileged runs.
	os.Chmod(filepath.Dir(d), 0o755)
	return d
}

// readPID reads a PID a test command wrote to dir/name.
func readPID(t *testing.T, dir, name string) int {
	t.Helper()
	// A file the shell has created may not be written yet, or only in
	// part: the PID is whole once its line ends (echo writes it at once),
	// or, from a writer without a newline, once it reads the same twice.
	var b, last []byte
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err = os.ReadFile(filepath.Join(dir, name))
		if err == nil && (bytes.HasSuffix(b, []byte("\n")) || len(b) > 0 && bytes.Equal(b, last)) || time.Now().After(deadline) {
			break
		}
		last = b
	}
	if err != nil {
		t.Fatalf("the command did not record %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("bad PID in %s: %q", name, b)
	}
	return pid
}

// cgroupDir is where contain with the given PID, started by this test
// process, makes its cgroup: beside the test's own cgroup members in the
// unified hierarchy. "" when there is no cgroup2 mount.
func cgroupDir(pid int) string {
	if own := ownCgroupDir(); own != "" {
		return filepath.Join(own, fmt.Sprintf("contain-%d", pid))
	}
	return ""
}

// ownCgroupDir is the test process's own cgroup v2 directory, or "".
func ownCgroupDir() string {
	own, mnt := "", ""
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				own = p
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if pre, post, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(post, "cgroup2 ") {
				if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
					mnt = f[4]
				}
			}
		}
	}
	if own == "" || mnt == "" {
		return ""
	}
	return filepath.Join(mnt, own)
}

// exists reports whether pid is a process, zombies included.
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// builtOnce is a program of testdata built once for the suite, beside
// contain (a directory nobody may read too, removed at the end).
type builtOnce struct {
	once sync.Once
	bin  string
	err  error
}

// path builds, the first time, package pkg of the module at dir as name,
// and returns where it is.
func (b *builtOnce) path(t *testing.T, name, dir, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		b.bin = filepath.Join(filepath.Dir(bin), name)
		b.err = goBuild(b.bin, dir, pkg)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// killOnCleanup ends pid when the test ends, in case an assertion failed
// before contain could.
//
// The process is pinned now, by a pidfd: by the test's end its PID may
// name another process (the suite's fork bombs bring PIDs round within
// seconds), which a kill by PID would end, another test's included.
func killOnCleanup(t *testing.T, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// environOf reads the environment of pid as a map.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading environ of %d: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

func init() { afterRun = checkRun }

// checkRun fails the test where contain left its cgroup behind, and drops
// from its stderr the lines CONTAIN_DISABLE makes it say (afterRun).
func checkRun(t *testing.T, cmd *exec.Cmd, res *result, started time.Time) {
	t.Helper()
	res.stderr = withoutDisableLines(res.stderr)
	dir := cgroupDir(res.pid)
	if dir == "" {
		return
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		// Killed by the test: nobody was left to remove it.
		t.Cleanup(func() { os.Remove(dir) })
	} else if made := time.Unix(st.Ctim.Unix()); made.Before(started) {
		// A dead run's group, whose contain had this PID before (the
		// suite's fork bombs bring PIDs round within seconds), still
		// holding its processes: contain could not make its own, and
		// left it be.
		t.Logf("%s was there before contain %d started (made %v), a dead run's", dir, res.pid, made)
	} else {
		t.Errorf("contain left its cgroup %s behind", dir)
	}
}

// tagged lists the live processes whose environment carries
// RUNNING_PROCESS_ORIGINATOR=value: what is left of a session. Processes
// whose environment this user cannot read are not listed.
func tagged(value string) []int {
	want := []byte("\x00RUNNING_PROCESS_ORIGINATOR=" + value + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, b...), want) || !alive(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
