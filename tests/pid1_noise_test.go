//go:build linux

package tests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestPID1NotCounted: where PID 1 cannot be read (a VM's or a sandbox's
// init, even by root), contain stop, wait, ps and reap do not count it
// among the processes whose environment cannot be read: contain never
// signals, asks or waits for PID 1, so nothing it could carry matters.
// Before the fix `contain stop NOPE:99999` answered "nothing to stop" and
// then "skipped 1 process whose environment cannot be read (1: permission
// denied)". nobody's case runs in a PID namespace of its own, where PID 1 is
// the only process contain cannot read: root's shell for nobody's
// contain; and root's contain on a host whose own PID 1 root cannot read.
func TestPID1NotCounted(t *testing.T) {
	t.Parallel()
	requireRoot(t, "a PID namespace, and processes of two users")
	testtool.Need(t, "setpriv", "util-linux")
	testtool.Need(t, "unshare", "util-linux")
	// The commands, each as CONTAIN would run it in the namespace; the
	// first line says whether PID 1 could be read there at all.
	commands := func(contain, dir string) string {
		return fmt.Sprintf(`
if %[1]s cat /proc/1/environ > /dev/null 2>&1; then echo readable > %[2]s/pid1; else echo unreadable > %[2]s/pid1; fi
%[1]s %[3]s stop NOPE:99999 > %[2]s/stop.out 2> %[2]s/stop.err; echo $? > %[2]s/stop.code
%[1]s %[3]s stop NOPE:1 > %[2]s/stop1.out 2> %[2]s/stop1.err
%[1]s %[3]s wait NOPE:99999 > %[2]s/wait.out 2> %[2]s/wait.err; echo $? > %[2]s/wait.code
%[1]s %[3]s ps > %[2]s/ps.out 2> %[2]s/ps.err
%[1]s %[3]s reap -n -o NOPE > %[2]s/reap.out 2> %[2]s/reap.err
echo done > %[2]s/done
`, contain, dir, bin)
	}
	for _, c := range []struct {
		name string
		// host: the commands see the whole machine, where other tests'
		// processes come and go, some with their environment written
		// over by their title (redis, nginx): only a line that counts
		// what cannot be read for want of permission is PID 1's.
		host bool
		run  func(t *testing.T, dir string)
	}{
		{"nobody, PID 1 root's", false, func(t *testing.T, dir string) {
			script := commands("setpriv --reuid=nobody --regid=nogroup --clear-groups --", dir) + "exit 0\n"
			cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script)
			cmd.Env = withoutTag(os.Environ())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("unshare: %v\n%s", err, out)
			}
		}},
		// Root, as the issue saw it: the host's own PID 1, where root cannot
		// read it (a VM's or a sandbox's init); skipped where root can, or
		// where it cannot read another process too. (Root without
		// CAP_SYS_PTRACE in a namespace whose PID 1 is another user's, or
		// undumpable, would show it anywhere, but not every kernel refuses
		// it: this one's test host read both.)
		{"root, the host's PID 1", true, func(t *testing.T, dir string) {
			if others := unreadableEnvirons(); len(others) > 0 {
				t.Skipf("root cannot read processes other than PID 1 here too: %v", others)
			}
			cmd := exec.Command("sh", "-c", commands("", dir)+"exit 0\n")
			cmd.Env = withoutTag(os.Environ())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sh: %v\n%s", err, out)
			}
			if others := unreadableEnvirons(); len(others) > 0 {
				t.Skipf("root cannot read processes other than PID 1 here too: %v", others)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := sharedDir(t)
			c.run(t, dir)
			read := func(name string) string {
				b, _ := os.ReadFile(filepath.Join(dir, name))
				if !c.host {
					return string(b)
				}
				var kept []string
				for _, l := range strings.SplitAfter(string(b), "\n") {
					if !strings.HasPrefix(l, "contain: skipped ") || strings.Contains(l, "permission denied") {
						kept = append(kept, l)
					}
				}
				return strings.Join(kept, "")
			}
			if read("done") != "done\n" {
				t.Fatalf("the namespace's script did not finish")
			}
			if read("pid1") != "unreadable\n" {
				t.Skipf("PID 1 of the namespace can be read here (%q): nothing to show", read("pid1"))
			}
			for _, cmd := range []string{"stop", "stop1", "wait", "ps", "reap"} {
				if got := read(cmd + ".err"); strings.Contains(got, "skipped") || strings.Contains(got, "cannot be read (") {
					t.Errorf("%s counts PID 1:\n%s", cmd, got)
				}
			}
			// stop's own answer, and nothing after it.
			if got, want := read("stop.err"), "contain: stop: nothing to stop: no process carries NOPE:99999\n"; got != want || read("stop.code") != "1\n" {
				t.Errorf("stop NOPE:99999: status %q, stderr %q, want 1 and %q", read("stop.code"), got, want)
			}
			if got, want := read("wait.err"), "contain: wait: nothing to wait for: no process carries NOPE:99999\n"; got != want || read("wait.code") != "0\n" {
				t.Errorf("wait NOPE:99999: status %q, stderr %q, want 0 and %q", read("wait.code"), got, want)
			}
		})
	}
}

// unreadableEnvirons lists the processes other than PID 1 whose
// environment this process cannot read for another reason than their end.
func unreadableEnvirons() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 {
			continue
		}
		if _, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
			out = append(out, pid)
		}
	}
	return out
}
