//go:build linux

package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestGuardShells: the crash guard works whatever /bin/sh is, in roots as
// CI containers have them, entered with chroot: Alpine's busybox (which
// picks its applet by the name it is called by), none at all (distroless),
// one that cannot be executed, one that exits at once. In each, contain
// run with the shim off (the guard alone ends the tree) is SIGKILLed while
// COMMAND's escapees (a background job, a setsid one, and in the busybox
// root a double fork, one that ignores SIGTERM and one that dropped the
// tag) run: the guard ends every one of them. A normal run ends its
// leftovers and exits with COMMAND's status; where there is no shell, a
// script without #! is "exec format error" (126) and --on-timeout, which
// needs one, is refused at the start (125).
func TestGuardShells(t *testing.T) {
	requireRoot(t, "chroot into roots with another /bin/sh, or none")
	static := staticBinaries(t)
	for _, c := range []struct {
		name  string
		shell func(t *testing.T, root string) // makes root's /bin/sh
	}{
		{"busybox", func(t *testing.T, root string) { installBusybox(t, testtool.StaticBusybox(t), root) }},
		{"none", func(*testing.T, string) {}},
		{"unexecutable", func(t *testing.T, root string) { // execve fails: ENOENT
			writeRootFile(t, filepath.Join(root, "bin/sh"), "#!/nowhere/sh\n", 0o755)
		}},
		{"exits-at-once", func(t *testing.T, root string) { // runs, but runs no script
			copyIntoRoot(t, static.escapees, filepath.Join(root, "bin/sh"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := makeRoot(t, static)
			c.shell(t, root)
			bb := c.name == "busybox"
			var tree []string
			if bb {
				tree = []string{"sh", "-c", crashTree("/tmp")}
			} else {
				tree = []string{"/escapees", "spawn", "/tmp/pids"}
			}

			// Crash: contain is SIGKILLed, the guard ends the tree (the
			// shim off: else it would end it before the guard). The guard
			// waits in the shell (the built-in waiter off), and then, on
			// linux/amd64, in the built-in waiter, which needs no shell.
			crashes := []struct {
				env  []string
				want string
			}{{noShimNoWaiter, map[bool]string{true: "sh", false: "contain"}[bb]}}
			if runtime.GOARCH == "amd64" && memfdExec() {
				crashes = append(crashes, struct {
					env  []string
					want string
				}{noShim, "contain-guard"})
			}
			for _, crash := range crashes {
				os.Remove(filepath.Join(root, "tmp/ready"))
				os.Remove(filepath.Join(root, "tmp/pids"))
				cmd, stderr, wait := startInRoot(t, root, crash.env, append([]string{"run", "-v", "--"}, tree...)...)
				var pids []int
				if bb {
					waitFor(t, "the tree", 10*time.Second, func() bool { return nonEmpty(filepath.Join(root, "tmp/ready")) })
					for _, k := range crashKinds {
						pids = append(pids, readPID(t, filepath.Join(root, "tmp"), k))
					}
				} else {
					pids = readPIDPair(t, filepath.Join(root, "tmp/pids"))
				}
				for _, p := range pids {
					killOnCleanup(t, p)
					if !alive(p) {
						t.Fatalf("%d ended before contain was killed; stderr:\n%s", p, stderr())
					}
				}
				guard := guardPID(t, stderr)
				killOnCleanup(t, guard)
				// busybox's sh waits (no Go runtime beside contain); where
				// there is no shell that can, contain __guard itself.
				// Looked at until it has its name: the built-in waiter is
				// named after its path (/proc/self/fd/6) until it names itself
				// (a CI run read "6").
				var comm string
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", guard))
					if comm = strings.TrimSpace(string(b)); comm == crash.want || time.Now().After(deadline) {
						break
					}
				}
				if comm != crash.want {
					t.Errorf("%q: the guard is %q, want %q", crash.env, comm, crash.want)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				res := wait()
				deadline := time.Now().Add(10 * time.Second) // the machine may be loaded
				for _, p := range pids {
					for alive(p) && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
					if alive(p) {
						t.Fatalf("%d outlived contain by 10s; contain's stderr:\n%s", p, stderr())
					}
				}
				waitFor(t, "the guard to end", 10*time.Second, func() bool { return !alive(guard) })
				for _, bad := range []string{"applet not found", "cannot brief", "cannot start the crash guard", "no crash guard"} {
					if strings.Contains(res.stderr, bad) {
						t.Errorf("stderr has %q:\n%s", bad, res.stderr)
					}
				}
				if want := fmt.Sprintf("guard: contain %d has ended without closing its group", res.pid); !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}

			// A normal run: COMMAND's status, its leftovers ended.
			var normal []string
			if bb {
				normal = []string{"sh", "-c", "sleep 300 & echo $! > /tmp/bg; setsid sleep 300 & echo $! > /tmp/sid; exit 3"}
			} else {
				normal = []string{"/escapees", "leave", "/tmp/left"}
			}
			_, _, wait := startInRoot(t, root, nil, append([]string{"run", "--"}, normal...)...)
			res := wait()
			var pids []int
			if bb {
				pids = []int{readPID(t, filepath.Join(root, "tmp"), "bg"), readPID(t, filepath.Join(root, "tmp"), "sid")}
			} else {
				pids = readPIDPair(t, filepath.Join(root, "tmp/left"))
			}
			for _, p := range pids {
				killOnCleanup(t, p)
			}
			if want := map[bool]int{true: 3, false: 0}[bb]; res.code != want {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", res.code, want, res.stderr)
			}
			for _, p := range pids {
				if alive(p) {
					t.Errorf("leftover %d outlived the run", p)
				}
			}

			if bb {
				// The hook runs with busybox's sh; a script without #! too.
				_, _, wait = startInRoot(t, root, nil, "run", "-t", "0.2", "--on-timeout", "echo hook ran", "--", "sleep", "30")
				if res := wait(); res.code != 124 || !strings.Contains(res.stderr, "hook ran") {
					t.Errorf("--on-timeout: exit status %d, want 124 and the hook's line; stderr:\n%s", res.code, res.stderr)
				}
				writeRootFile(t, filepath.Join(root, "script"), "exit 7\n", 0o755)
				for _, env := range [][]string{nil, noShim} {
					_, _, wait = startInRoot(t, root, env, "run", "--", "/script")
					if res := wait(); res.code != 7 {
						t.Errorf("a script without #! (%q): exit status %d, want 7; stderr:\n%s", env, res.code, res.stderr)
					}
				}
				return
			}
			// No shell to run them: one line, the documented status.
			if c.name != "none" {
				return // a /bin/sh there is, for these, if a broken one
			}
			writeRootFile(t, filepath.Join(root, "script"), "exit 7\n", 0o755)
			for _, env := range [][]string{nil, noShim} { // by the shim, by contain
				_, _, wait = startInRoot(t, root, env, "run", "--", "/script")
				if res := wait(); res.code != 126 || res.stderr != "contain: cannot run /script: exec format error\n" {
					t.Errorf("a script without #! (%q): exit status %d, want 126 and exec format error; stderr:\n%s", env, res.code, res.stderr)
				}
			}
			_, _, wait = startInRoot(t, root, nil, "run", "-t", "1", "--on-timeout", "echo hook ran", "--", "/escapees", "sleep")
			if res := wait(); res.code != 125 || res.stderr != "contain: --on-timeout needs /bin/sh to run its command, and there is none\n" {
				t.Errorf("--on-timeout: exit status %d, want 125 and one line; stderr:\n%s", res.code, res.stderr)
			}
		})
	}
}

// noShim turns the shim off; noShimNoWaiter the built-in waiter too, so
// that the crash guard waits in the shell.
var (
	noShim         = []string{"CONTAIN_DISABLE=shim"}
	noShimNoWaiter = []string{"CONTAIN_DISABLE=shim,waiter"}
)

// staticSet is contain and the escapees helper, built without cgo, to run
// in a root that has no dynamic loader.
type staticSet struct{ contain, escapees string }

func staticBinaries(t *testing.T) staticSet {
	t.Helper()
	dir := t.TempDir()
	s := staticSet{filepath.Join(dir, "contain"), filepath.Join(dir, "escapees")}
	for out, pkg := range map[string]string{s.contain: "..", s.escapees: "./testdata/escapees"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s without cgo: %v\n%s", pkg, err, b)
		}
	}
	return s
}

// makeRoot makes a root with the static contain as /contain and the
// escapees as /escapees, and the places contain needs.
func makeRoot(t *testing.T, s staticSet) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"bin", "proc", "dev", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	writeRootFile(t, filepath.Join(root, "dev/null"), "", 0o666) // the mount point of /dev/null
	copyIntoRoot(t, s.contain, filepath.Join(root, "contain"))
	copyIntoRoot(t, s.escapees, filepath.Join(root, "escapees"))
	return root
}

// installBusybox makes busybox root's /bin/sh and every other command, as
// Alpine has them: links named by the applet.
func installBusybox(t *testing.T, busybox, root string) {
	t.Helper()
	copyIntoRoot(t, busybox, filepath.Join(root, "bin/busybox"))
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
}

func writeRootFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func copyIntoRoot(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeRootFile(t, to, string(b), 0o755)
}

func nonEmpty(path string) bool {
	b, _ := os.ReadFile(path)
	return len(b) > 0
}

// readPIDs reads the "PID PID" line the escapees write (whole: they
// rename it into place).
func readPIDPair(t *testing.T, path string) []int {
	t.Helper()
	waitFor(t, path, 10*time.Second, func() bool { return nonEmpty(path) })
	b, _ := os.ReadFile(path)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", path, b)
		}
		pids = append(pids, p)
	}
	if len(pids) != 2 {
		t.Fatalf("%s: %q, want two PIDs", path, b)
	}
	return pids
}

// startInRoot starts /contain with args in root as its /, as a container
// would: in a mount namespace of its own with /proc and /dev/null mounted
// there, with a minimal environment and env. The namespace is made by a thread
// that ends with it started, and lives as long as a process in it.
func startInRoot(t *testing.T, root string, env []string, args ...string) (*exec.Cmd, func() string, func() result) {
	t.Helper()
	cmd := &exec.Cmd{
		Path:        "/contain",
		Args:        append([]string{"contain"}, args...),
		Env:         append([]string{"PATH=/bin:/"}, env...),
		Dir:         "/",
		SysProcAttr: &syscall.SysProcAttr{Chroot: root},
		WaitDelay:   5 * time.Second, // a survivor would hold the pipes open
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		started <- func() error {
			if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
			if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
				return fmt.Errorf("making the mounts private: %w", err)
			}
			if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
				return fmt.Errorf("mounting proc: %w", err)
			}
			if err := syscall.Mount("/dev/null", filepath.Join(root, "dev/null"), "", syscall.MS_BIND, ""); err != nil {
				return fmt.Errorf("binding /dev/null: %w", err)
			}
			return cmd.Start()
		}()
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stderr.String, func() result {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Fatalf("contain did not return within a minute; stderr:\n%s", stderr.String())
		}
		res := result{stdout: stdout.String(), stderr: withoutDisableLines(stderr.String()), pid: cmd.Process.Pid}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res.code = ee.ExitCode()
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				res.code, res.signal = 128+int(ws.Signal()), ws.Signal()
			}
		default:
			t.Fatalf("contain %q: %v", args, err)
		}
		return res
	}
}
