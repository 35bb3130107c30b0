//go:build linux && containvm

package vm

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// The TestSystemd* tests run in the VM that TestSystemd boots, from the
// cgroup of the service that runs them, which holds the test itself too:
// contain cannot enable controllers below it, and asks systemd for a
// scope, contain-PID.scope, that holds the limits.

// systemdUsers are root, and the user u (uid 1000) once its manager
// runs (lingering starts it at boot).
func systemdUsers(t *testing.T) []who {
	sock := fmt.Sprintf("/run/user/%d/systemd/private", userUID)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager of uid %d never started (%s)", userUID, sock)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return []who{{"root", 0}, {"user", userUID}}
}

// scopeDir finds the cgroup of contain-PID.scope ("": none).
func scopeDir(pid int) string {
	name := fmt.Sprintf("contain-%d.scope", pid)
	var found string
	filepath.WalkDir(cgroupRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// unitGone waits until systemd no longer lists contain-PID.scope for w,
// and its cgroup is gone.
func unitGone(t *testing.T, w who, pid int) {
	t.Helper()
	unit := fmt.Sprintf("contain-%d.scope", pid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		args := []string{"list-units", "--all", "--no-legend", "--plain", unit}
		cmd := exec.Command("systemctl", args...)
		if w.uid != 0 {
			cmd = exec.Command("systemctl", append([]string{"--user"}, args...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}}
			cmd.Env = append(os.Environ(), fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", w.uid))
		}
		out, err := cmd.CombinedOutput()
		dir := scopeDir(pid)
		if err == nil && !strings.Contains(string(out), unit) && dir == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still there (systemctl: %v %q; cgroup %q)", unit, err, out, dir)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// managerName is how contain names w's manager.
func managerName(w who) string {
	if w.uid == 0 {
		return "system"
	}
	return "user " + strconv.Itoa(w.uid)
}

// TestSystemdScopeMemory: --memory against a double-forked escapee that
// allocates 400 MiB, from a cgroup that holds other processes: systemd's
// scope holds the limit, the kernel's OOM killer ends the tree at it,
// contain exits 137 and names the scope, and the scope is gone after.
func TestSystemdScopeMemory(t *testing.T) {
	for _, w := range systemdUsers(t) {
		t.Run(w.name, func(t *testing.T) {
			pids := openDir(t)
			mark := kmsgMark()
			r := containRun(t, w, "", append([]string{"--memory", "64M", "-t", "60", "--"}, helperCmd("escapee", pids, "400")...)...)
			pid := r.report.ContainPID
			unit := fmt.Sprintf("contain-%d.scope", pid)
			if r.code != 137 {
				t.Errorf("exit %d, want 137", r.code)
			}
			if !strings.Contains(r.stderr, fmt.Sprintf("systemd (%s) moved contain into %s", managerName(w), unit)) {
				t.Errorf("-v does not say that systemd (%s) made %s", managerName(w), unit)
			}
			if l := limitOf(t, r, "--memory"); l.EnforcedBy != "systemd scope "+unit+" memory.max" || !l.Exceeded {
				t.Errorf("the report's --memory: %+v", l)
			}
			checkOOMKill(t, r, 64<<20, mark, pids)
			unitGone(t, w, pid)
		})
	}
}

// TestSystemdScopePids: --pids against a fork bomb in systemd's scope
// (TasksMax): never more than N tasks, forks refused, 124.
func TestSystemdScopePids(t *testing.T) {
	const n = 16
	for _, w := range systemdUsers(t) {
		t.Run(w.name, func(t *testing.T) {
			cmd, stderr, rep := startContain(t, w, "", "--pids", strconv.Itoa(n), "-t", "3", "--", "sh", "-c", "f() { f & f & }; f 2>/dev/null; exec sleep 30")
			most, dir := 0, ""
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
		watch:
			for {
				select {
				case <-done:
					break watch
				default:
				}
				if dir == "" {
					if sc := scopeDir(cmd.Process.Pid); sc != "" {
						dir = filepath.Join(sc, fmt.Sprintf("contain-%d", cmd.Process.Pid)) // the run's group: contain is beside it
					}
				}
				if dir != "" {
					b, _ := os.ReadFile(filepath.Join(dir, "pids.current"))
					if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
						most = max(most, v)
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Logf("exit %d, the most tasks at once in the run's group: %d\n%s", cmd.ProcessState.ExitCode(), most, stderr)
			if code := cmd.ProcessState.ExitCode(); code != 124 {
				t.Errorf("exit %d, want 124", code)
			}
			if most > n || most < n/2 {
				t.Errorf("at most %d tasks in the run's group, want up to --pids %d", most, n)
			}
			if !strings.Contains(stderr.String(), fmt.Sprintf("--pids 16: enforced by systemd scope contain-%d.scope pids.max", cmd.Process.Pid)) {
				t.Error("-v does not say that the scope's pids.max holds the limit")
			}
			_ = rep
			unitGone(t, w, cmd.Process.Pid)
		})
	}
}

// guardPID reads the crash guard's PID from contain's -v.
var guardPID = regexp.MustCompile(`crash guard: PID (\d+)`)

// TestSystemdScopeCrash: contain killed by SIGKILL while its tree runs in
// systemd's scope: the guard ends the tree and the scope goes. With the
// guard killed too, contain reap ends what is left and the scope goes.
func TestSystemdScopeCrash(t *testing.T) {
	for _, w := range systemdUsers(t) {
		for _, withGuard := range []bool{true, false} {
			name := w.name + "/guard"
			if !withGuard {
				name = w.name + "/reap"
			}
			t.Run(name, func(t *testing.T) {
				pids := openDir(t)
				cmd, stderr, _ := startContain(t, w, "", append([]string{"--memory", "64M", "--"}, helperCmd("tree", pids)...)...)
				tree := pidsIn(t, pids, 3)
				if scopeDir(cmd.Process.Pid) == "" {
					t.Errorf("no contain-%d.scope while the tree runs", cmd.Process.Pid)
				}
				if !withGuard {
					m := guardPID.FindStringSubmatch(stderr.String())
					if m == nil {
						t.Fatalf("no guard PID in:\n%s", stderr)
					}
					g, _ := strconv.Atoi(m[1])
					unix.Kill(g, unix.SIGKILL)
				}
				cmd.Process.Signal(unix.SIGKILL)
				cmd.Wait()
				if !withGuard {
					time.Sleep(500 * time.Millisecond)
					if len(testtool.Living(tree)) == 0 {
						t.Fatal("the tree ended with contain and its guard: nothing left for reap")
					}
					reap := exec.Command(contain, "reap", "--session", fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid))
					if w.uid != 0 {
						reap.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}}
					}
					out, err := reap.CombinedOutput()
					t.Logf("contain reap: %v\n%s", err, out)
				}
				deadline := time.Now().Add(5 * time.Second)
				for len(testtool.Living(tree)) > 0 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				if a := testtool.Living(tree); len(a) > 0 {
					t.Errorf("alive: %v\n%s", a, stderr)
				}
				unitGone(t, w, cmd.Process.Pid)
			})
		}
	}
}

// TestSystemdScopePartOf: contain started by a service (as a CI runner's
// is) moves into its scope, out of the service's cgroup; stopping the
// service stops the scope too (PartOf=), so that COMMAND's tree ends with
// the service as it did when contain stayed in its cgroup.
func TestSystemdScopePartOf(t *testing.T) {
	unit := fmt.Sprintf("contain-outer-%d.service", os.Getpid())
	// Another process in the service's cgroup (as a runner's own is
	// there): contain cannot enable controllers there, and asks for a scope.
	logf := filepath.Join(openDir(t), "contain.log")
	out, err := exec.Command("systemd-run", "--unit", unit, "-p", "Type=exec", "/bin/sh", "-c", "sleep 600 & exec "+contain+" run -v --memory 64M -- sleep 300 2>"+logf).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-run: %v\n%s", err, out)
	}
	defer exec.Command("systemctl", "stop", unit).Run()
	var pid int
	var scope string
	deadline := time.Now().Add(10 * time.Second)
	for scope == "" {
		b, _ := exec.Command("systemctl", "show", "-p", "MainPID", "--value", unit).Output()
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 {
			scope = scopeDir(pid)
		}
		if time.Now().After(deadline) {
			said, _ := os.ReadFile(logf)
			status, _ := exec.Command("systemctl", "status", "--no-pager", unit).CombinedOutput()
			t.Fatalf("no contain-%d.scope for %s; contain said:\n%s\n%s", pid, unit, said, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// contain moves into the scope, then starts COMMAND in the run's
	// group: on a busy host, a moment later.
	tree := []int{}
	for deadline := time.Now().Add(10 * time.Second); len(tree) == 0; time.Sleep(50 * time.Millisecond) {
		procs, _ := os.ReadFile(filepath.Join(scope, fmt.Sprintf("contain-%d", pid), "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if p, err := strconv.Atoi(f); err == nil {
				tree = append(tree, p)
			}
		}
		if len(tree) == 0 && time.Now().After(deadline) {
			t.Fatalf("nothing in the run's group of %s", scope)
		}
	}
	partOf, _ := exec.Command("systemctl", "show", "-p", "PartOf", "--value", filepath.Base(scope)).Output()
	t.Logf("%s (PartOf=%s) holds %v", scope, strings.TrimSpace(string(partOf)), tree)
	if strings.TrimSpace(string(partOf)) != unit {
		t.Errorf("%s is PartOf=%q, want %s", filepath.Base(scope), strings.TrimSpace(string(partOf)), unit)
	}
	if err := exec.Command("systemctl", "stop", unit).Run(); err != nil {
		t.Fatalf("systemctl stop %s: %v", unit, err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(testtool.Living(tree)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if a := testtool.Living(tree); len(a) > 0 {
		t.Errorf("alive after systemctl stop %s: %v", unit, a)
	}
	unitGone(t, who{"root", 0}, pid)
}

// TestSystemdStrictLimits: --strict-limits runs where systemd's scope lets
// the kernel hold the limits, and refuses (125, before COMMAND starts)
// where no scope may be asked for, saying why in its one line.
func TestSystemdStrictLimits(t *testing.T) {
	for _, w := range systemdUsers(t) {
		t.Run(w.name, func(t *testing.T) {
			r := containRun(t, w, "", "--strict-limits", "--memory", "64M", "--pids", "100", "--", "true")
			if r.code != 0 {
				t.Errorf("with a scope: exit %d, want 0", r.code)
			}
			cmd := exec.Command(contain, "run", "--strict-limits", "--memory", "64M", "--", "sh", "-c", "echo started")
			cmd.Env = append(os.Environ(), "CONTAIN_DISABLE=systemd", "HOME=/home/u")
			if w.uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}}
			}
			out, _ := cmd.CombinedOutput()
			t.Logf("CONTAIN_DISABLE=systemd: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
			if code := cmd.ProcessState.ExitCode(); code != 125 || strings.Contains(string(out), "started") {
				t.Errorf("without a scope: exit %d (want 125), COMMAND started: %v", code, strings.Contains(string(out), "started"))
			}
			if !strings.Contains(string(out), "contain: refusing to run: --memory 64 MiB cannot be enforced by the kernel here") || !strings.Contains(string(out), "no systemd scope: turned off by CONTAIN_DISABLE") {
				t.Error("the refusal does not say why")
			}
		})
	}
}
