//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

// shimMode is one way contain runs its shim, a subreaper above COMMAND,
// where there is no cgroup: the built-in keeper (linux/amd64), or
// contain __shim, a Go program (CONTAIN_DISABLE=keeper, and every other
// machine). comm is the shim's name while COMMAND runs.
type shimMode struct {
	name string
	env  []string
	comm string
}

func shimModes() []shimMode {
	modes := []shimMode{{"contain __shim", []string{"CONTAIN_DISABLE=cgroup,keeper"}, "exe"}}
	if runtime.GOARCH == "amd64" && memfdExec() {
		modes = append(modes, shimMode{"keeper", []string{"CONTAIN_DISABLE=cgroup"}, "contain-shim"})
	}
	return modes
}

// memfdExec reports whether the kernel executes a memfd (vm.memfd_noexec
// below 2, or a kernel without it): else the built-in programs cannot run,
// and contain runs the shell and contain __shim in their place.
func memfdExec() bool {
	b, err := os.ReadFile("/proc/sys/vm/memfd_noexec")
	return err != nil || strings.TrimSpace(string(b)) != "2"
}

// TestShimStarts: COMMAND started by the shim, both kinds, as root and as
// nobody: its status, GNU timeout's for what cannot be started (127 not
// found, 126 not executable or a directory), a script without #! run by
// /bin/sh, the timeout, its arguments and environment as given (the tag
// among them), and the shim as its parent.
func TestShimStarts(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("exit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "not-exec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range shimModes() {
		for _, nobody := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nobody=%t", m.name, nobody), func(t *testing.T) {
				t.Parallel()
				o := runOpts{asNobody: nobody, env: append([]string{"CONTAIN_TEST_X=a  b"}, m.env...)}
				for _, c := range []struct {
					args []string
					want int
				}{
					{[]string{"--", "sh", "-c", "exit 3"}, 3},
					{[]string{"--", "sh", "-c", "kill -USR1 $$"}, 128 + 10},
					{[]string{"--", "contain-no-such-command"}, 127},
					{[]string{"--", filepath.Join(dir, "missing")}, 127},
					{[]string{"--", notExec}, 126},
					{[]string{"--", dir}, 126},
					{[]string{"--", script}, 7},
					{[]string{"-t", "0.2", "--", "sleep", "30"}, 124},
					{[]string{"-t", "0.2", "-s", "KILL", "--", "sleep", "30"}, 137},
				} {
					res := run(t, o, append([]string{"run"}, c.args...)...)
					if res.code != c.want {
						t.Errorf("%q: exit status %d, want %d; stderr:\n%s", c.args, res.code, c.want, res.stderr)
					}
				}
				res := run(t, o, "run", "-v", "--", "sh", "-c",
					`printf '[%s]' "$@"; echo; echo "$RUNNING_PROCESS_ORIGINATOR|$CONTAIN_TEST_X"; cat /proc/$PPID/comm`, "sh", "a b", "", "c")
				wantCode(t, res, 0)
				want := fmt.Sprintf("[a b][][c]\nCONTAIN:%d|a  b\n%s\n", res.pid, m.comm)
				if res.stdout != want {
					t.Errorf("stdout %q, want %q; stderr:\n%s", res.stdout, want, res.stderr)
				}
				if !strings.Contains(res.stderr, "containment: process group, pdeathsig, subreaper, tracking, shim") {
					t.Errorf("-v does not name the shim:\n%s", res.stderr)
				}
			})
		}
	}
}

// TestShimCrashAfterCommand: contain is killed after COMMAND ended, while
// it waits out the grace period of a leftover that ignores SIGTERM. The
// shim, which reaped COMMAND (the keeper: before contain __shim took
// over, from its journal), closes the session: the leftover is killed,
// and the shim writes the report.
func TestShimCrashAfterCommand(t *testing.T) {
	t.Parallel()
	for _, m := range shimModes() {
		for _, nobody := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nobody=%t", m.name, nobody), func(t *testing.T) {
				t.Parallel()
				dir := sharedDir(t)
				rep := filepath.Join(dir, "report.json")
				cmd, stderr, wait := startContainLive(t, runOpts{asNobody: nobody, env: m.env}, "run", "-v", "-g", "30", "--report", rep, "--",
					"sh", "-c", `sh -c 'trap "" TERM; echo $$ > `+dir+`/left; exec sleep 300' & sleep 0.2; exit 3`)
				left := readPID(t, dir, "left")
				killOnCleanup(t, left)
				waitFor(t, "contain to signal the leftover", 10*time.Second, func() bool {
					return strings.Contains(stderr(), "sending SIGTERM to leftover")
				})
				cmd.Process.Signal(syscall.SIGKILL)
				wait()
				waitFor(t, "the shim to kill the leftover", 10*time.Second, func() bool { return !alive(left) })
				if !strings.Contains(stderr(), "shim: contain "+fmt.Sprint(cmd.Process.Pid)+" has ended without closing its group: closing it") {
					t.Errorf("the shim did not close the session:\n%s", stderr())
				}
				if m.comm == "contain-shim" && !strings.Contains(stderr(), "shim: took over from the keeper") {
					t.Errorf("contain __shim did not take over from the keeper:\n%s", stderr())
				}
				var r report.Report
				waitFor(t, "the shim's report", 10*time.Second, func() bool {
					b, err := os.ReadFile(rep)
					return err == nil && json.Unmarshal(b, &r) == nil && r.WrittenBy == "shim"
				})
				if len(r.Leftovers) != 1 || r.Leftovers[0].PID != left || r.Leftovers[0].EndedBy != "SIGKILL" {
					t.Errorf("leftovers %+v, want %d killed", r.Leftovers, left)
				}
				// The shim reaped COMMAND: how it ended is no longer
				// "only contain knew".
				if r.Ending.ExitCode == nil || *r.Ending.ExitCode != 3 || r.Ending.Absent["exit_code"] != "" {
					t.Errorf("the shim's report has COMMAND's exit code %v (absent: %q), want 3", r.Ending.ExitCode, r.Ending.Absent["exit_code"])
				}
			})
		}
	}
}

// crashTreeReady waits for crashTree(dir) to be ready and returns its
// PIDs, COMMAND's first, each killed at the end of the test.
func crashTreeReady(t *testing.T, dir string) []int {
	t.Helper()
	waitFor(t, "the tree to be ready", 10*time.Second, func() bool { return nonEmpty(filepath.Join(dir, "ready")) })
	pids := []int{readPID(t, dir, "ready")}
	for _, kind := range crashKinds {
		pids = append(pids, readPID(t, dir, kind))
	}
	for _, p := range pids {
		killOnCleanup(t, p)
	}
	return pids
}

// waitAllGone waits until none of pids is alive, at most 10 s.
func waitAllGone(t *testing.T, pids []int) {
	t.Helper()
	waitFor(t, "the tree to be ended", 10*time.Second, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	})
}

func init() { helpers["refuse"] = refuse }

// refuse is the helper that runs a program where one system call fails
// (EPERM, from a seccomp filter), as in a sandbox that forbids it:
// memfd_create (contain's built-in programs cannot be written, and contain
// must fall back to the shell and to contain __shim), or signalfd4 (the
// built-in keeper starts, and ends before it starts COMMAND).
//
//	refuse memfd_create|signalfd4 PROGRAM [ARG...]
func refuse(args []string) int {
	calls := map[string]uint32{"memfd_create": unix.SYS_MEMFD_CREATE, "signalfd4": unix.SYS_SIGNALFD4}
	if len(args) < 2 || calls[args[0]] == 0 {
		fmt.Fprintln(os.Stderr, "usage: refuse memfd_create|signalfd4 PROGRAM [ARG...]")
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "refuse:", err)
		return 127
	}
	refused := calls[args[0]]
	path, err := exec.LookPath(args[1])
	if err != nil {
		return fail(err)
	}
	// PROGRAM's environment is the test's.
	os.Unsetenv(helperVar)
	// The filter holds for this thread and what it executes.
	runtime.LockOSThread()
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		arch = 4 // offsetof(struct seccomp_data, arch)
		nr   = 0 // offsetof(struct seccomp_data, nr)
	)
	filter := []unix.SockFilter{
		{Code: ld, K: arch},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.AUDIT_ARCH_X86_64},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW}, // another machine: no filter
		{Code: ld, K: nr},
		{Code: jeq, Jt: 0, Jf: 1, K: refused},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fail(e)
	}
	return fail(syscall.Exec(path, args[1:], os.Environ()))
}

// TestKeeperEndsBeforeCommand: a keeper that ends before it starts
// COMMAND (here signalfd4 is refused) gives way to contain __shim, which
// starts COMMAND; the guard is told of the new shim, and a SIGKILL of
// contain leaves nothing. Before, COMMAND was started without a shim, and
// the guard waited for the dead keeper.
func TestKeeperEndsBeforeCommand(t *testing.T) {
	if runtime.GOARCH != "amd64" || !memfdExec() {
		t.Skip("no built-in keeper here")
	}
	requireRoot(t, "runs as nobody through setpriv after the filter")
	testtool.Need(t, "setpriv", "util-linux")
	t.Parallel()
	dir := sharedDir(t)
	cmd, stderr := startRefused(t, nil, "signalfd4", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
		bin, "run", "-v", "--", "sh", "-c", `cat /proc/$PPID/comm > `+dir+`/parent; `+crashTree(dir))
	pids := crashTreeReady(t, dir)
	// It ended before or after the word to start: "broken pipe", or EOF.
	if !regexp.MustCompile(`cannot start the built-in keeper: (cannot brief the shim: broken pipe|the shim ended before starting COMMAND: EOF) \(the shim runs as contain __shim\)`).MatchString(stderr.String()) {
		t.Errorf("-v does not say the keeper gave way:\n%s", stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "parent")); strings.TrimSpace(string(b)) != "exe" {
		t.Errorf("COMMAND's parent is %q, want contain __shim (exe)", strings.TrimSpace(string(b)))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitAllGone(t, pids)
	if !strings.Contains(stderr.String(), "shim: contain ") {
		t.Errorf("contain __shim did not close the session:\n%s", stderr.String())
	}
}

// TestBuiltinsRefused: where memfd_create is refused (a seccomp filter,
// as some sandboxes have), the crash guard waits in /bin/sh and the shim
// is contain __shim, -v says so, and contain killed with SIGKILL still
// leaves nothing: as root without a cgroup, and as nobody.
func TestBuiltinsRefused(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("no built-in programs on %s: nothing to refuse", runtime.GOARCH)
	}
	requireRoot(t, "runs as root and as nobody")
	testtool.Need(t, "setpriv", "util-linux")
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%t", nobody), func(t *testing.T) {
			dir := sharedDir(t)
			var argv []string
			if nobody {
				argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
			}
			argv = append(argv, bin, "run", "-v", "--", "sh", "-c", `cat /proc/$PPID/comm > `+dir+`/parent; `+crashTree(dir))
			cmd, stderr := startRefused(t, []string{"CONTAIN_DISABLE=cgroup"}, "memfd_create", argv...)
			pids := crashTreeReady(t, dir)
			for _, want := range []string{"crash guard: PID", ", waiting in /bin/sh",
				"cannot start the built-in keeper: operation not permitted (the shim runs as contain __shim)"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("-v lacks %q:\n%s", want, stderr.String())
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "parent")); strings.TrimSpace(string(b)) != "exe" {
				t.Errorf("COMMAND's parent is %q, want contain __shim (exe)", strings.TrimSpace(string(b)))
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			waitAllGone(t, pids)
		})
	}
}

// TestShimKeepsInheritedFds: COMMAND inherits the descriptors contain
// inherited (systemd's sockets, make's jobserver, a 5>log), with or
// without a shim: the shim's own go above them. Before, the keeper's
// took 3 to 8 and closed them for COMMAND, and contain __shim's 3 and 4.
func TestShimKeepsInheritedFds(t *testing.T) {
	t.Parallel()
	type mode struct {
		name string
		env  []string
	}
	modes := []mode{{"cgroup or none", nil}}
	for _, m := range shimModes() {
		modes = append(modes, mode{m.name, m.env})
	}
	for _, m := range modes {
		for _, nobody := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nobody=%t", m.name, nobody), func(t *testing.T) {
				t.Parallel()
				if nobody {
					testtool.Need(t, "setpriv", "util-linux")
				}
				as := ""
				if nobody {
					as = "setpriv --reuid=nobody --regid=nogroup --clear-groups -- "
				}
				script := as + `"$0" run -- sh -c 'for fd in 3 4 5 7 9; do [ -e /proc/self/fd/$fd ] && printf "%s " $fd; done' 3</dev/null 4>/dev/null 5>/dev/null 7>/dev/null 9</dev/null`
				cmd := exec.Command("sh", "-c", script, bin)
				cmd.Env = append(os.Environ(), m.env...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if got := withoutDisableLines(string(out)); got != "3 4 5 7 9 " {
					t.Errorf("COMMAND has descriptors %q of 3 4 5 7 9", got)
				}
			})
		}
	}
}

// TestKeeperPendingSignals: signals sent to the keeper while contain
// lives are blocked there, so pending; when contain dies, the keeper
// hands over to contain __shim keeper, which must not die of them (SIGPROF
// and SIGRTMIN among them, which the keeper did not ignore before: the
// guard then wrote the report, the shim's close undone).
func TestKeeperPendingSignals(t *testing.T) {
	if runtime.GOARCH != "amd64" || !memfdExec() {
		t.Skip("no built-in keeper here")
	}
	t.Parallel()
	dir := sharedDir(t)
	rep := filepath.Join(dir, "report.json")
	cmd, stderr, wait := startContainLive(t, runOpts{asNobody: true}, "run", "-v", "--report", rep, "--", "sh", "-c", crashTree(dir))
	pids := crashTreeReady(t, dir)
	var m []string
	waitFor(t, "-v to name the shim", 10*time.Second, func() bool {
		m = regexp.MustCompile(`shim: PID (\d+)`).FindStringSubmatch(stderr())
		return m != nil
	})
	keeper, _ := strconv.Atoi(m[1])
	for _, sig := range []syscall.Signal{syscall.SIGPROF, 34, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGHUP} {
		syscall.Kill(keeper, sig)
	}
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	wait()
	waitAllGone(t, pids)
	var r report.Report
	waitFor(t, "the report", 10*time.Second, func() bool {
		b, err := os.ReadFile(rep)
		return err == nil && json.Unmarshal(b, &r) == nil
	})
	if r.WrittenBy != "shim" || !strings.Contains(stderr(), "took over from the keeper") {
		t.Errorf("the report is written by %q, want the shim; stderr:\n%s", r.WrittenBy, stderr())
	}
}

// TestShimNoPdeathsig: CONTAIN_DISABLE=pdeathsig holds under either shim:
// COMMAND outlives a shim killed alone (contain, a subreaper, takes it),
// where it got its Pdeathsig before whatever -v said.
func TestShimNoPdeathsig(t *testing.T) {
	t.Parallel()
	for _, m := range shimModes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			env := append(slices.Clone(m.env), "CONTAIN_DISABLE=cgroup,pdeathsig"+strings.TrimPrefix(m.env[0], "CONTAIN_DISABLE=cgroup"))
			cmd, stderr, wait := startContainLive(t, runOpts{env: env}, "run", "-v", "--", "sh", "-c", "echo $$ > "+dir+"/ready; sleep 300")
			waitFor(t, "COMMAND", 10*time.Second, func() bool { return nonEmpty(filepath.Join(dir, "ready")) })
			command := readPID(t, dir, "ready")
			killOnCleanup(t, command)
			var m []string
			waitFor(t, "-v to name the shim", 10*time.Second, func() bool {
				m = regexp.MustCompile(`shim: PID (\d+)`).FindStringSubmatch(stderr())
				return m != nil
			})
			if !strings.Contains(stderr(), "pdeathsig turned off") {
				t.Fatalf("-v does not say pdeathsig is off:\n%s", stderr())
			}
			shimPID, _ := strconv.Atoi(m[1])
			syscall.Kill(shimPID, syscall.SIGKILL)
			time.Sleep(300 * time.Millisecond)
			if !alive(command) {
				t.Errorf("COMMAND died with its shim: it had a Pdeathsig; stderr:\n%s", stderr())
			}
			cmd.Process.Signal(syscall.SIGTERM)
			wait()
		})
	}
}

// startRefused starts argv with system call call refused (the refuse
// helper), env added to the test's environment, its stderr kept; it is
// killed when the test ends.
func startRefused(t *testing.T, env []string, call string, argv ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(self(t), append([]string{call}, argv...)...)
	cmd.Env = append(append(os.Environ(), env...), helperVar+"=refuse")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stderr
}
