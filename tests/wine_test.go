//go:build linux

package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Windows is tested here, under Wine: these tests build contain.exe and the
// Windows test binaries, make a Wine prefix that can run Go 1.26 programs
// (DESIGN.md, Windows), and run the Windows tests in it.

// wine is the prepared Wine set-up, shared by the tests of this binary.
var wine struct {
	once    sync.Once
	err     error
	dir     string // contain.exe and the test binaries
	prefix  string // this run's prefix
	env     []string
	skipWhy string
}

// needWine prepares Wine once, or skips (fails in CI, which installs it).
func needWine(t *testing.T) {
	t.Helper()
	wine.once.Do(setUpWine)
	if wine.skipWhy != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the Windows tests: %s", wine.skipWhy)
		}
		t.Skip(wine.skipWhy)
	}
	if wine.err != nil {
		t.Fatalf("setting up Wine: %v", wine.err)
	}
}

func setUpWine() {
	for _, tool := range []string{"wine", "wineserver", "x86_64-w64-mingw32-as", "x86_64-w64-mingw32-ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			wine.skipWhy = fmt.Sprintf("%s is not installed (apt-get install wine wine64 binutils-mingw-w64-x86-64, as .ci/run does)", tool)
			return
		}
	}
	dir, err := os.MkdirTemp("", "contain-wine-")
	if err != nil {
		wine.err = err
		return
	}
	wine.dir = dir
	template, err := winePrefixTemplate()
	if err != nil {
		wine.err = err
		return
	}
	// A prefix of this run's own, so that ending its wineserver ends only
	// what these tests started: a copy of the template by hard links.
	wine.prefix = filepath.Join(dir, "prefix")
	if out, err := exec.Command("cp", "-al", template, wine.prefix).CombinedOutput(); err != nil {
		wine.err = fmt.Errorf("cp -al %s: %v: %s", template, err, out)
		return
	}
	wine.env = append(os.Environ(), "WINEPREFIX="+wine.prefix, "WINEDEBUG=-all")
	// One warm wineserver for the whole run: a cold start costs ~0.8 s.
	ws := exec.Command("wineserver", "-p")
	ws.Env = wine.env
	if err := ws.Run(); err != nil {
		wine.err = fmt.Errorf("wineserver -p: %v", err)
		return
	}
	// The first program a new prefix runs starts its services; the
	// tests' first start then fails now and then ("Internal error").
	// (Its output goes nowhere: the services it starts would hold a pipe.)
	warm := exec.Command("wine", "cmd", "/c", "exit", "0")
	warm.Env = wine.env
	if err := warm.Run(); err != nil {
		wine.err = fmt.Errorf("wine cmd /c exit 0: %v", err)
		return
	}
	builds := [][]string{
		{"build", "-o", filepath.Join(dir, "contain.exe"), ".."},
		{"test", "-c", "-o", filepath.Join(dir, "tests.exe"), "."},
		{"test", "-c", "-o", filepath.Join(dir, "platform.exe"), "../platform"},
		{"test", "-c", "-o", filepath.Join(dir, "tag.exe"), "../tag"},
		{"test", "-c", "-o", filepath.Join(dir, "session.exe"), "../session"},
	}
	for _, b := range builds {
		cmd := exec.Command("go", b...)
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			wine.err = fmt.Errorf("go %s: %v\n%s", strings.Join(b, " "), err, out)
			return
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		wine.err = err
		return
	}
	wine.env = append(wine.env, "CONTAIN_EXE="+winPath(filepath.Join(dir, "contain.exe")),
		"CONTAIN_TEST_TMP="+winPath(filepath.Join(dir, "tmp")))
}

// endWine stops this run's wineserver, and with it anything of the tests
// that is left in the prefix, and removes the prefix.
func endWine() {
	if wine.prefix == "" {
		return
	}
	k := exec.Command("wineserver", "-k")
	k.Env = wine.env
	k.Run()
	w := exec.Command("wineserver", "-w")
	w.Env = wine.env
	w.Run()
	os.RemoveAll(wine.dir)
}

// winPath is a Linux path as Wine's Windows programs see it.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// winePrefixTemplate makes, once per machine, a Wine prefix in which Go
// 1.26 programs run: Wine 8 lacks bcryptprimitives.dll's ProcessPrng, which
// the Go runtime needs; a DLL whose one export forwards it to advapi32's
// SystemFunction036 (RtlGenRandom) is enough.
func winePrefixTemplate() (string, error) {
	base := os.Getenv("CONTAIN_WINE_TEMPLATE")
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(cache, "contain", "wine-prefix")
	}
	dll := filepath.Join(base, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); err == nil {
		return base, nil
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(base), "wine-prefix-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	prefix := filepath.Join(tmp, "prefix")
	env := append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all")
	steps := []struct {
		name string
		args []string
	}{
		{"wineboot", []string{"wineboot", "-i"}},
		{"wineserver", []string{"wineserver", "-w"}},
		{"as", []string{"x86_64-w64-mingw32-as", "-o", filepath.Join(tmp, "empty.o"), "/dev/null"}},
		{"ld", []string{"x86_64-w64-mingw32-ld", "--shared", "-e", "0", "-o", filepath.Join(tmp, "bcryptprimitives.dll"),
			filepath.Join(tmp, "empty.o"), filepath.Join(tmp, "bcryptprimitives.def")}},
	}
	def := "LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng = advapi32.SystemFunction036\n"
	if err := os.WriteFile(filepath.Join(tmp, "bcryptprimitives.def"), []byte(def), 0o644); err != nil {
		return "", err
	}
	for _, s := range steps {
		// Output to a file, not a pipe: the services wineboot starts
		// would hold a pipe open.
		log, err := os.Create(filepath.Join(tmp, s.name+".log"))
		if err != nil {
			return "", err
		}
		cmd := exec.Command(s.args[0], s.args[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		err = cmd.Run()
		log.Close()
		if err != nil {
			out, _ := os.ReadFile(log.Name())
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(s.args, " "), err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(tmp, "bcryptprimitives.dll"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), b, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(base) // a half-made one
	if err := os.Rename(prefix, base); err != nil {
		return "", err
	}
	return base, nil
}

// runUnderWine runs a Windows test binary of package pkg in a console
// (script(1) gives Wine a terminal, and so the programs a console that
// console control events go through), logs its output, and fails the test
// if the Windows tests fail. skips lists the Windows tests that skipped.
func runUnderWine(t *testing.T, exe, pkg string) (skips []string) {
	t.Helper()
	args := []string{"wine", filepath.Join(wine.dir, exe), "-test.v", "-test.count=1", "-test.timeout=10m"}
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
	passed := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		line = strings.NewReplacer("\x1b[?25l", "", "\x1b[?25h", "").Replace(line)
		t.Log(line)
		switch {
		case strings.HasPrefix(line, "--- PASS"):
			passed++
		case strings.HasPrefix(line, "--- SKIP"):
			skips = append(skips, strings.TrimPrefix(line, "--- SKIP: "))
		}
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the Windows tests of %s failed under Wine: %v", pkg, err)
	}
	if passed == 0 {
		t.Fatalf("no Windows test of %s passed under Wine", pkg)
	}
	return skips
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestWindowsUnderWine runs the Windows tests of contain's packages under
// Wine: the end-to-end tests of this package (win_*_test.go), the
// platform's, and the portable packages' as Windows builds them.
func TestWindowsUnderWine(t *testing.T) {
	needWine(t)
	for _, p := range []struct{ exe, dir string }{
		{"tag.exe", "../tag"}, {"session.exe", "../session"}, {"platform.exe", "../platform"}, {"tests.exe", "."},
	} {
		t.Run(strings.TrimSuffix(p.exe, ".exe"), func(t *testing.T) {
			for _, s := range runUnderWine(t, p.exe, p.dir) {
				if !strings.Contains(s, "TestWinTimeoutBreak") {
					t.Errorf("a Windows test skipped under Wine for a reason Wine does not impose: %s", s)
				}
			}
		})
	}
}

// TestWindowsKillNineUnderWine: contain.exe's Wine process killed with
// SIGKILL from Linux (the harshest end a Windows process can have under
// Wine): the job dies with it, so its `start /b` child and its detached
// grandchild are gone within the second the SPEC allows.
func TestWindowsKillNineUnderWine(t *testing.T) {
	needWine(t)
	dir, err := os.MkdirTemp(filepath.Join(wine.dir, "tmp"), "kill9-")
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("kill9-marker-%d", time.Now().UnixNano())
	cmd := exec.Command("wine", filepath.Join(wine.dir, "contain.exe"), "run", "--", winPath(filepath.Join(wine.dir, "tests.exe")), "stay", marker)
	cmd.Env = append(wine.env, "CONTAIN_HELPER=tree", "CONTAIN_HELPER_DIR="+winPath(dir))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, cmd.Process.Pid)
	waitFor(t, "the tree to start", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "command"))
		return err == nil
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
	cmd.Wait()
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
