//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

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
	nomemfd := filepath.Join(t.TempDir(), "nomemfd")
	if out, err := exec.Command("go", "build", "-o", nomemfd, "./testdata/nomemfd").CombinedOutput(); err != nil {
		t.Fatalf("building nomemfd: %v\n%s", err, out)
	}
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%t", nobody), func(t *testing.T) {
			dir := sharedDir(t)
			argv := []string{nomemfd}
			if nobody {
				argv = append(argv, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")
			}
			argv = append(argv, bin, "run", "-v", "--", "sh", "-c", `cat /proc/$PPID/comm > `+dir+`/parent; `+crashTree(dir))
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "CONTAIN_DISABLE=cgroup")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			cmd.WaitDelay = time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, "the tree to be ready", 10*time.Second, func() bool { return nonEmpty(filepath.Join(dir, "ready")) })
			pids := []int{readPID(t, dir, "ready")}
			for _, kind := range crashKinds {
				pids = append(pids, readPID(t, dir, kind))
			}
			for _, p := range pids {
				killOnCleanup(t, p)
			}
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
			waitFor(t, "the tree to be ended", 10*time.Second, func() bool {
				for _, p := range pids {
					if alive(p) {
						return false
					}
				}
				return true
			})
		})
	}
}
