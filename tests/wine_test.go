//go:build linux

package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/internal/winetest"
)

// Windows is tested here, under Wine: these tests build contain.exe and the
// Windows test binaries, make a Wine prefix that can run Go 1.26 programs
// (CONTRIBUTING.md, The Windows tests, under Wine), and run the Windows
// tests in it.

// wine is the prepared Wine set-up, shared by the tests of this binary.
var wine struct {
	once    sync.Once
	err     error
	dir     string // contain.exe, the test binaries, tmp/
	w       *winetest.Wine
	env     []string
	skipWhy string
}

// needWine prepares Wine once, or skips (fails in CI, which installs it).
func needWine(t *testing.T) {
	t.Helper()
	wine.once.Do(setUpWine)
	if wine.skipWhy != "" {
		testtool.Missing(t, wine.skipWhy)
	}
	if wine.err != nil {
		t.Fatalf("setting up Wine: %v", wine.err)
	}
}

func setUpWine() {
	if wine.skipWhy = winetest.Missing(); wine.skipWhy != "" {
		return
	}
	wine.dir, wine.err = os.MkdirTemp("", "contain-wine-")
	if wine.err != nil {
		return
	}
	if wine.w, wine.err = winetest.Start(wine.dir); wine.err != nil {
		return
	}
	// Built at once: each build is mostly waiting on the linker.
	builds := [][]string{
		{"build", "-o", filepath.Join(wine.dir, "contain.exe"), ".."},
		{"test", "-c", "-o", filepath.Join(wine.dir, "tests.exe"), "."},
		{"test", "-c", "-o", filepath.Join(wine.dir, "run.exe"), "../internal/run"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "hook.exe"), "../internal/hook"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "job.exe"), "../internal/job"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "reap.exe"), "../internal/reap"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "proc.exe"), "../internal/proc"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "ports.exe"), "../internal/ports"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "tag.exe"), "../tag"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "session.exe"), "../session"},
		{"test", "-c", "-o", filepath.Join(wine.dir, "containment.exe"), "../containment"},
		// The library's host, a module of its own.
		{"-C", filepath.Join("testdata", "libhost"), "build", "-o", filepath.Join(wine.dir, "libhost.exe"), "."},
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = winetest.BuildWindows(b...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if wine.err = err; err != nil {
			return
		}
	}
	if wine.err = os.Mkdir(filepath.Join(wine.dir, "tmp"), 0o755); wine.err != nil {
		return
	}
	wine.env = append(wine.w.Env, "CONTAIN_EXE="+winPath(filepath.Join(wine.dir, "contain.exe")),
		"CONTAIN_TEST_TMP="+winPath(filepath.Join(wine.dir, "tmp")),
		"CONTAIN_LIBHOST="+winPath(filepath.Join(wine.dir, "libhost.exe")))
}

// endWine stops this run's wineserver, and with it anything of the tests
// that is left in the prefix, and removes the prefix.
func endWine() {
	if wine.w != nil {
		wine.w.Stop()
	}
	if wine.dir != "" {
		os.RemoveAll(wine.dir)
	}
}

var winPath = winetest.Path

// runUnderWine runs a Windows test binary of package pkg in a console
// (script(1) gives Wine a terminal, and so the programs a console that
// console control events go through), logs its output, and fails the test
// if the Windows tests fail. skips lists the Windows tests that skipped.
// run, if set, selects the tests to run (-test.run).
//
// Wine 8 now and then fails to start a program: CreateProcess gives
// "Internal error." (the new process ended before it had started; seen
// about once in ten full runs of the suite, on the tests' own starts and
// on contain.exe's). Where the binary failed and Wine said so, the tests
// that failed run once more, and their second outcome stands.
func runUnderWine(t *testing.T, exe, pkg, run string) (skips []string) {
	t.Helper()
	testtool.Need(t, "script", "bsdutils")
	skips, failed, wineFault, err := wineAttempt(t, exe, pkg, run)
	switch {
	case err != nil && wineFault && len(failed) > 0:
		t.Logf("Wine could not start a program (Internal error.): running %s of %s once more", strings.Join(failed, ", "), pkg)
		again := "^(" + strings.Join(failed, "|") + ")$"
		_, _, _, err = wineAttempt(t, exe, pkg, again)
	case errors.Is(err, errNothingRan):
		// The test binary itself did not start under Wine (it printed
		// nothing at all, once in some thirty full runs): once more.
		t.Logf("%s printed nothing under Wine: running it once more", exe)
		skips, _, _, err = wineAttempt(t, exe, pkg, run)
	}
	if err != nil {
		t.Fatalf("the Windows tests of %s failed under Wine: %v", pkg, err)
	}
	return skips
}

// errNothingRan: a Windows test binary printed nothing under Wine.
var errNothingRan = errors.New("it printed nothing: Wine did not start it")

// wineAttempt is one run of a Windows test binary: the tests that
// skipped, the top-level tests that failed, whether Wine failed to start
// a program meanwhile, and the binary's failure.
func wineAttempt(t *testing.T, exe, pkg, run string) (skips, failed []string, wineFault bool, err error) {
	t.Helper()
	args := []string{"wine", filepath.Join(wine.dir, exe), "-test.v", "-test.count=1", "-test.timeout=10m"}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	cmd := exec.Command("script", "-qefc", shellQuote(args), "/dev/null")
	cmd.Dir = pkg
	cmd.Env = wine.env
	cmd.Stdin = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A Windows test binary that hangs (a leftover holding the terminal)
	// must not hold this test until go test's own timeout.
	watchdog := time.AfterFunc(8*time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer watchdog.Stop()
	passed, lines := 0, 0
	var joined strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines++
		line := strings.TrimRight(sc.Text(), "\r")
		line = strings.NewReplacer("\x1b[?25l", "", "\x1b[?25h", "").Replace(line)
		t.Log(line)
		// The console wraps long lines ("... I" / "nternal error."): the
		// lines are looked at joined.
		joined.WriteString(line)
		switch {
		case strings.HasPrefix(line, "--- PASS"):
			passed++
		case strings.HasPrefix(line, "--- SKIP"):
			skips = append(skips, strings.TrimPrefix(line, "--- SKIP: "))
		case strings.HasPrefix(line, "--- FAIL: "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "--- FAIL: "), " ")
			failed = append(failed, name)
		}
	}
	io.Copy(io.Discard, out)
	wineFault = strings.Contains(strings.ReplaceAll(joined.String(), "\x1b[K", ""), "Internal error.")
	if err := cmd.Wait(); err != nil {
		if lines == 0 {
			return skips, failed, wineFault, fmt.Errorf("%w: %v", errNothingRan, err)
		}
		return skips, failed, wineFault, err
	}
	if lines == 0 {
		return skips, failed, wineFault, errNothingRan
	}
	if passed == 0 {
		return skips, failed, wineFault, fmt.Errorf("no Windows test passed")
	}
	return skips, failed, wineFault, nil
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestWindowsUnderWine runs the Windows tests of contain's packages under
// Wine: the end-to-end tests of this package (win_*_test.go,
// *_win_test.go), and the unit tests of run, job, reap, proc, tag, session
// and containment as Windows builds them.
// CONTAIN_WINE_RUN, when set, runs only the end-to-end tests it selects
// (a -test.run pattern: CONTAIN_WINE_RUN='TestWin.*Limit' go test ./tests
// -run TestWindowsUnderWine/tests), in one shard.
func TestWindowsUnderWine(t *testing.T) {
	t.Parallel() // a Wine prefix and wineserver of its own
	needWine(t)
	only := os.Getenv("CONTAIN_WINE_RUN")
	type binary struct{ name, exe, dir, run string }
	binaries := []binary{
		{"tag", "tag.exe", "../tag", ""}, {"session", "session.exe", "../session", ""}, {"run", "run.exe", "../internal/run", ""}, {"hook", "hook.exe", "../internal/hook", ""},
		{"job", "job.exe", "../internal/job", ""}, {"reap", "reap.exe", "../internal/reap", ""}, {"proc", "proc.exe", "../internal/proc", ""},
		{"ports", "ports.exe", "../internal/ports", ""}, {"containment", "containment.exe", "../containment", ""},
	}
	// The end-to-end tests, mostly waiting on timeouts, in shards that
	// run at once, each in a console of its own.
	for i, shard := range winShards(t, 3) {
		binaries = append(binaries, binary{fmt.Sprintf("tests/%d", i+1), "tests.exe", ".", shard})
	}
	if only != "" {
		binaries = []binary{{"tests", "tests.exe", ".", only}}
	}
	// The unit packages, seconds in all, one after the other beside the
	// three shards: more Wine programs at once than that made Wine fail
	// to start one now and then ("Internal error").
	units := make(chan struct{}, 1)
	for _, p := range binaries {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			if !strings.HasPrefix(p.name, "tests") {
				units <- struct{}{}
				defer func() { <-units }()
			}
			for _, s := range runUnderWine(t, p.exe, p.dir, p.run) {
				if !wineSkips(s) {
					t.Errorf("a Windows test skipped under Wine for a reason Wine does not impose: %s", s)
				}
			}
		})
	}
}

// wineSkips reports whether a Windows test's skip line names a test that
// checks what only Windows does.
func wineSkips(skip string) bool {
	for _, name := range []string{"TestWinTimeoutBreak", "TestWinMemoryLimitJobObject", "TestWindowsListening"} {
		if strings.HasPrefix(skip, name+" ") {
			return true
		}
	}
	return false
}

// TestWindowsKillNineUnderWine: contain.exe's Wine process killed with
// SIGKILL from Linux (the harshest end a Windows process can have under
// Wine): the job dies with it, so its `start /b` child and its detached
// grandchild are gone within the second the SPEC allows.
func TestWindowsKillNineUnderWine(t *testing.T) {
	needWine(t)
	cmd, exited, dir, marker, out := startKillNineTree(t)
	if cmd == nil {
		t.Logf("Wine could not start a program (Internal error.), contain said:\n%s\nstarting the tree once more", out.String())
		if cmd, exited, dir, marker, out = startKillNineTree(t); cmd == nil {
			t.Fatalf("Wine could not start the tree twice; contain said:\n%s", out.String())
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Logf("contain's output:\n%s\nrecords: %v", out.String(), names)
		}
	})
	// The Wine processes of the tree, by the marker on their command line;
	// contain's own (wine execs in place: it is cmd.Process.Pid) aside.
	var tree []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == cmd.Process.Pid {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), marker) && alive(pid) {
			tree = append(tree, pid)
			killOnCleanup(t, pid)
		}
	}
	if len(tree) < 3 {
		t.Fatalf("found %d processes of the tree (COMMAND, its start /b child, its detached grandchild): %v", len(tree), tree)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()
	waitFor(t, "the tree to be gone", 5*time.Second, func() bool {
		for _, pid := range tree {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	if d := time.Since(killed); d > time.Second {
		t.Errorf("the tree outlived contain by %v (the SPEC allows a second)", d)
	}
	t.Logf("%d processes gone %v after kill -9 of contain", len(tree), time.Since(killed).Round(time.Millisecond))
}

// startKillNineTree starts contain.exe on a tree of three (COMMAND, its
// start /b child, its detached grandchild) and waits until it has started;
// cmd is nil where contain.exe ended first because Wine failed to start
// COMMAND (Internal error.: runUnderWine says more). exited is closed
// once contain.exe has been waited for.
func startKillNineTree(t *testing.T) (cmd *exec.Cmd, exited <-chan struct{}, dir, marker string, out *syncBuffer) {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(wine.dir, "tmp"), "kill9-")
	if err != nil {
		t.Fatal(err)
	}
	marker = fmt.Sprintf("kill9-marker-%d", time.Now().UnixNano())
	cmd = exec.Command("wine", filepath.Join(wine.dir, "contain.exe"), "run", "--", winPath(filepath.Join(wine.dir, "tests.exe")), "stay", marker)
	cmd.Env = append(wine.env, helperVar+"=tree", "CONTAIN_HELPER_DIR="+winPath(dir))
	out = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, cmd.Process.Pid)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	started := false
	waitFor(t, "the tree to start", time.Minute, func() bool {
		if _, err := os.Stat(filepath.Join(dir, "command")); err == nil {
			started = true
			return true
		}
		select {
		case <-done:
			return strings.Contains(out.String(), "Internal error.")
		default:
			return false
		}
	})
	if !started {
		return nil, done, dir, marker, out
	}
	return cmd, done, dir, marker, out
}

// winSlow are the end-to-end Windows tests that take seconds under Wine
// (measured), for winShards to spread.
var winSlow = map[string]int{
	"TestWinTimeoutCtrlC": 12, "TestWinWait": 9, "TestWinOnTimeout": 7, "TestWinSignalKill": 6,
	"TestWinTreeGoneAfterTimeout": 5, "TestWinStopOtherTool": 4, "TestWinCPUsLimit": 3, "TestWinTimeoutFallback": 3,
	"TestWinAllowDaemons": 3, "TestWinAllowDaemonsUnmarked": 3, "TestWinStopKill": 3, "TestWinTruthTimeoutEnded": 5,
}

// winShards splits the end-to-end Windows tests (the Test functions of
// win_*_test.go and *_win_test.go) into n -test.run patterns of about the
// same time.
func winShards(t *testing.T, n int) []string {
	files, err := filepath.Glob("win_*_test.go")
	more, _ := filepath.Glob("*_win_test.go")
	files = append(files, more...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no win_*_test.go here: %v", err)
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "func Test"); ok {
				if name, _, ok := strings.Cut(rest, "(t *testing.T)"); ok {
					names = append(names, "Test"+name)
				}
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return winSlow[names[i]] > winSlow[names[j]] })
	shards, load := make([][]string, n), make([]int, n)
	for _, name := range names {
		least := 0
		for i := range load {
			if load[i] < load[least] {
				least = i
			}
		}
		shards[least] = append(shards[least], name)
		load[least] += max(winSlow[name], 1)
	}
	patterns := make([]string, n)
	for i, s := range shards {
		patterns[i] = "^(" + strings.Join(s, "|") + ")$"
	}
	return patterns
}
