//go:build windows

package tests

// Windows's part of the harness (harness_test.go). The Windows end-to-end
// tests run under Wine on Linux, started by TestWindowsUnderWine
// (wine_test.go), which builds contain.exe and names it in CONTAIN_EXE;
// this test binary also plays every helper process they start.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// runTests runs the tests (TestMain): there is nothing to build,
// TestWindowsUnderWine built contain.exe.
func runTests(m *testing.M) int {
	bin = os.Getenv("CONTAIN_EXE")
	return m.Run()
}

// tmpDir is a new directory for one test. Under Wine it is made below
// CONTAIN_TEST_TMP, which the Linux side removes: Go's RemoveAll fails
// there (Wine 8 lacks what os.RemoveAll's unlinkat needs), and so would
// t.TempDir's cleanup.
func tmpDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CONTAIN_TEST_TMP")
	if base == "" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp(base, strings.ReplaceAll(t.Name(), "/", "_"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// needContain skips a test when no contain.exe was built for it.
func needContain(t *testing.T) {
	t.Helper()
	if bin == "" {
		t.Skip("CONTAIN_EXE is not set: these tests run under Wine, started by TestWindowsUnderWine (go test ./tests on Linux)")
	}
}

// asHelper runs COMMAND, this binary, as helper h; dir is where helpers
// write what they report.
func asHelper(h, dir string, extra ...string) runOpts {
	return runOpts{env: append([]string{helperVar + "=" + h, "CONTAIN_HELPER_DIR=" + dir}, extra...)}
}

func init() {
	for _, h := range []string{"exit", "env", "sleep", "tree", "middle", "ctrlc", "ignore", "alloc", "spin", "spinners", "forker"} {
		helpers[h] = func(args []string) int { return playHelper(h, args) }
	}
}

// playHelper plays helper process h and returns its exit status. Helpers
// that record themselves write "PID TAG DAEMON" to
// $CONTAIN_HELPER_DIR/NAME.
func playHelper(h string, args []string) int {
	dir := os.Getenv("CONTAIN_HELPER_DIR")
	switch h {
	case "exit": // exit with the code in args[0], the full 32 bits
		n, _ := strconv.ParseUint(args[0], 0, 32)
		windows.ExitProcess(uint32(n))
	case "env": // print the tag
		fmt.Printf("%s|%s\n", os.Getenv("RUNNING_PROCESS_ORIGINATOR"), os.Getenv("RUNNING_PROCESS_IS_DAEMON"))
		return 0
	case "sleep": // record itself as args[0], then sleep
		record(dir, args[0])
		time.Sleep(2 * time.Minute)
		return 0
	case "tree": // start a `start /b` child and a detached grandchild, then
		// exit once dir/exit exists (or sleep, with args[0] == "stay")
		self, _ := os.Executable()
		marker := strings.Join(args[1:], " ")
		b := exec.Command("cmd", "/c", "start", "/b", self, "startb", marker)
		b.Env = append(os.Environ(), helperVar+"=sleep")
		if err := b.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "start /b:", err)
			return 1
		}
		d := exec.Command(self, "middle", marker)
		d.Env = append(os.Environ(), helperVar+"=middle")
		if err := d.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "middle:", err)
			return 1
		}
		waitFile(filepath.Join(dir, "startb"))
		waitFile(filepath.Join(dir, "detached"))
		record(dir, "command")
		for args[0] == "stay" || !fileExists(filepath.Join(dir, "exit")) {
			time.Sleep(20 * time.Millisecond)
		}
		return 7
	case "middle": // start a detached sleeper, then exit: its child is orphaned
		self, _ := os.Executable()
		c := exec.Command(self, "detached", strings.Join(args, " "))
		c.Env = append(os.Environ(), helperVar+"=sleep")
		c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP}
		if err := c.Start(); err != nil {
			return 1
		}
		return 0
	case "ctrlc": // exit 42 on Ctrl-C (or 43 on any other stop)
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		record(dir, "ctrlc")
		<-c
		return 42
	case "ignore": // ignore Ctrl-C
		windows.NewLazySystemDLL("kernel32.dll").NewProc("SetConsoleCtrlHandler").Call(0, 1)
		record(dir, "ignore")
		time.Sleep(2 * time.Minute)
		return 0
	case "alloc": // allocate and touch 8 MiB every 20 ms, up to 1 GiB, writing
		// how many MiB it holds to dir/allocated, then sleep
		record(dir, "alloc")
		var held [][]byte
		for i := 1; i <= 128; i++ {
			b := make([]byte, 8<<20)
			for k := 0; k < len(b); k += 4096 {
				b[k] = 1
			}
			held = append(held, b)
			os.WriteFile(filepath.Join(dir, "allocated"), []byte(strconv.Itoa(8*i)), 0o644)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * time.Minute)
		return len(held)
	case "spin": // spin for args[0] seconds of wall-clock time (0: for ever),
		// then print the CPU time it used and the time it took, in ms
		d, _ := strconv.ParseFloat(args[0], 64)
		start := time.Now()
		for d == 0 || time.Since(start).Seconds() < d {
		}
		var created, exited, kernel, user windows.Filetime
		windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user)
		cpu := time.Duration(uint64(kernel.HighDateTime)<<32|uint64(kernel.LowDateTime)) * 100
		cpu += time.Duration(uint64(user.HighDateTime)<<32|uint64(user.LowDateTime)) * 100
		fmt.Printf("%d %d\n", cpu.Milliseconds(), time.Since(start).Milliseconds())
		return 0
	case "spinners": // run children that spin for 0.3 s each, one after the
		// other, for ever: only the ended ones add up to much CPU time
		self, _ := os.Executable()
		record(dir, "spinners")
		for {
			c := exec.Command(self, "0.3")
			c.Env = append(os.Environ(), helperVar+"=spin")
			c.Run()
		}
	case "forker": // start a tagged child every 20 ms, forever
		self, _ := os.Executable()
		record(dir, "forker")
		for i := 0; ; i++ {
			c := exec.Command(self, fmt.Sprintf("forked%d", i))
			c.Env = append(os.Environ(), helperVar+"=sleep")
			c.Start()
			time.Sleep(20 * time.Millisecond)
		}
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", h)
	return 2
}

// record writes "PID TAG DAEMON" to dir/name, atomically.
func record(dir, name string) {
	line := fmt.Sprintf("%d %s %s", os.Getpid(), os.Getenv("RUNNING_PROCESS_ORIGINATOR"), os.Getenv("RUNNING_PROCESS_IS_DAEMON"))
	tmp := filepath.Join(dir, name+".tmp")
	os.WriteFile(tmp, []byte(line), 0o644)
	os.Rename(tmp, filepath.Join(dir, name))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func waitFile(path string) {
	for deadline := time.Now().Add(30 * time.Second); !fileExists(path) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// recorded is what a helper wrote of itself.
type recorded struct {
	pid    int
	tag    string
	daemon string
	h      windows.Handle // opened while it ran: it pins the process
}

// readRecord waits for a helper's record and opens its process, which is
// then known to be that helper (it still runs, so its PID is its own).
func readRecord(t *testing.T, dir, name string) recorded {
	t.Helper()
	path := filepath.Join(dir, name)
	deadline := time.Now().Add(30 * time.Second)
	var f []string
	var pid int
	for {
		// (Under Wine a renamed file can be seen empty for a moment.)
		b, err := os.ReadFile(path)
		f = strings.Split(string(b), " ")
		if pid, err = strconv.Atoi(f[0]); err == nil && len(f) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper %s did not record itself (%q)", name, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		t.Fatalf("helper %s (PID %d) is gone already: %v", name, pid, err)
	}
	r := recorded{pid: pid, tag: f[1], daemon: f[2], h: h}
	t.Cleanup(func() {
		windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	})
	if r.gone() {
		t.Fatalf("helper %s (PID %d) had ended before the test could pin it", name, pid)
	}
	return r
}

// gone reports whether the recorded process has ended.
func (r recorded) gone() bool {
	ev, err := windows.WaitForSingleObject(r.h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// goneWithin waits up to d for the process to end.
func (r recorded) goneWithin(d time.Duration) bool {
	ev, err := windows.WaitForSingleObject(r.h, uint32(d/time.Millisecond))
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// startFailedEarly: the new process failed to initialise before running
// any of its code (startCmd). Wine 8's CreateProcess then returns
// ERROR_INTERNAL_ERROR ("Internal error"; its ntdll maps a child that died
// during start-up without an exit code to STATUS_INTERNAL_ERROR), 1 start
// in a few hundred on a loaded machine. Windows itself never fails a
// start so.
func startFailedEarly(err error) bool {
	return errors.Is(err, windows.ERROR_INTERNAL_ERROR)
}

// underWine reports whether these tests run under Wine (ntdll exports
// wine_get_version there).
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// hasConsole reports whether this process has a console, through which
// contain can send console control events.
func hasConsole() bool {
	r, _, _ := windows.NewLazySystemDLL("kernel32.dll").NewProc("GetConsoleWindow").Call()
	var mode uint32
	return r != 0 || windows.GetConsoleMode(windows.Stdout, &mode) == nil || windows.GetConsoleMode(windows.Stdin, &mode) == nil
}
