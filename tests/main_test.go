//go:build linux

package tests

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// bin is the contain binary under test, built once by TestMain into a
// directory that an unprivileged user can read too.
var bin string

// hog is the tests' resource hog (testdata/hog), built beside contain.
var hog string

// runTests builds contain, hog and, where it is missing, setsid, then
// runs the tests (TestMain).
func runTests(m *testing.M) int {
	// Most of these tests wait (on timeouts, grace periods, processes
	// ending), few use a core: by default they run eight at a time, not
	// one per core (-parallel, given, wins).
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "8")
	}
	// Not beside tests/vm's QEMU, which takes every core: the CPU shares
	// and races measured here would fail.
	if release, err := testtool.HoldMachine(); err == nil {
		defer release()
	} else {
		fmt.Fprintf(os.Stderr, "tests: running beside other test packages (cannot lock: %v)\n", err)
	}
	return buildAndRun(m)
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "contain-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "contain")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building contain:", err)
		return 1
	}
	hog = filepath.Join(dir, "hog")
	if runtime.GOOS == "windows" {
		hog += ".exe"
	}
	build = exec.Command("go", "build", "-o", hog, "./testdata/hog")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hog:", err)
		return 1
	}
	// The scripts' setsid(1): util-linux's, else (a machine with only Go,
	// sh and coreutils) testdata/setsid, which does the same, on PATH.
	if _, err := exec.LookPath("setsid"); err != nil {
		tools := filepath.Join(dir, "tools")
		build = exec.Command("go", "build", "-o", filepath.Join(tools, "setsid"), "./testdata/setsid")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building setsid:", err)
			return 1
		}
		os.Setenv("PATH", tools+string(os.PathListSeparator)+os.Getenv("PATH"))
		standInSetsid = true
	}
	defer endWine()
	// A whole run prepares Wine (builds the Windows binaries, boots the
	// prefix) while the first tests run: the tests that need it wait for
	// it then, not before.
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
		go wine.once.Do(setUpWine)
		defer wine.once.Do(func() {}) // done before endWine
	}
	return m.Run()
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

// result is one finished run of contain.
type result struct {
	stdout, stderr string
	code           int
	signal         syscall.Signal // contain died of it (code is then 128+N)
	pid            int            // of contain
}

// runOpts change how contain is started.
type runOpts struct {
	asNobody bool     // through setpriv, as nobody:nogroup
	env      []string // added to the test's environment
	stdin    string
}

// containCmd builds the command line that runs contain with args.
func containCmd(o runOpts, args ...string) *exec.Cmd {
	argv := append([]string{bin}, args...)
	if o.asNobody {
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.env...)
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	return cmd
}

// run runs contain to the end; a run that outlives a minute fails the test.
func run(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	_, wait := startContain(t, o, args...)
	return wait()
}

// wantCode fails the test unless res ended with code.
func wantCode(t *testing.T, res result, code int) {
	t.Helper()
	if res.code != code {
		t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", res.code, code, res.stdout, res.stderr)
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

// alive reports whether pid is a process that has not exited: a zombie is
// dead (the init of some machines reaps orphaned zombies late).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
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
		cmd := exec.Command("go", "build", "-o", b.bin, pkg)
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s in %s: %v\n%s", pkg, dir, err, msg)
		}
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

// startContain starts contain in the background for tests that signal it
// while it runs; the returned wait gives its result.
func startContain(t *testing.T, o runOpts, args ...string) (*exec.Cmd, func() result) {
	t.Helper()
	cmd, _, wait := startContainLive(t, o, args...)
	return cmd, wait
}

// startContainLive is startContain that also gives what contain has
// written to stderr so far.
func startContainLive(t *testing.T, o runOpts, args ...string) (*exec.Cmd, func() string, func() result) {
	t.Helper()
	if o.asNobody {
		testtool.Need(t, "setpriv", "util-linux")
	}
	cmd := containCmd(o, args...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A leftover that survives (a failing test) would hold the pipes open:
	// stop reading them soon after contain has exited.
	cmd.WaitDelay = 5 * time.Second
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		cmd.Process.Kill()
	})
	return cmd, stderr.String, func() result {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			t.Fatalf("contain did not return within a minute; stderr:\n%s", stderr.String())
		}
		res := result{stdout: stdout.String(), stderr: withoutDisableLines(stderr.String()), pid: cmd.Process.Pid}
		if dir := cgroupDir(res.pid); dir != "" {
			var st syscall.Stat_t
			if err := syscall.Stat(dir, &st); err == nil {
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
					// Killed by the test: nobody was left to remove it.
					t.Cleanup(func() { os.Remove(dir) })
				} else if made := time.Unix(st.Ctim.Unix()); made.Before(started) {
					// A dead run's group, whose contain had this PID
					// before (the suite's fork bombs bring PIDs round
					// within seconds), still holding its processes:
					// contain could not make its own, and left it be.
					t.Logf("%s was there before contain %d started (made %v), a dead run's", dir, res.pid, made)
				} else {
					t.Errorf("contain left its cgroup %s behind", dir)
				}
			}
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res.code = ee.ExitCode()
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				res.code, res.signal = 128+int(ws.Signal()), ws.Signal()
				if ws.CoreDump() {
					t.Errorf("contain dumped core")
				}
			}
		default:
			t.Fatalf("contain %q: %v", args, err)
		}
		return res
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
