//go:build linux || darwin

package run

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

// goneGroup is a cgroup that answers a release as the kernel does for a
// process that ended since the scan saw it.
type goneGroup struct {
	noGroup
	err error
}

func (goneGroup) name() string                  { return "cgroup /sys/fs/cgroup/contain-1" }
func (g goneGroup) release(int) (string, error) { return "", g.err }

// TestSpareEnded: --allow-daemons releases a daemon that has ended since
// the scan saw it (the move answered ESRCH, or its /proc entry is gone):
// that is no error — -v says it ended, and nothing says "cannot move"
// (before: "cannot move 7541 out of cgroup ...: no such process").
func TestSpareEnded(t *testing.T) {
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	start := proc.StartOf(pid)
	c.Wait() // gone, and its PID not yet handed out again
	for _, err := range []error{
		fmt.Errorf("write cgroup.procs: %w", unix.ESRCH),
		fmt.Errorf("%w (open /proc/%d/cgroup: no such file or directory)", errNotInGroup, pid),
	} {
		var lines []string
		r := &runner{grp: goneGroup{err: err}, guard: noGuard{}, shim: noShim{}, lim: noLimits{}, log: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}
		r.sys = r
		r.spare([]proc.Entry{{PID: pid, Start: start, Comm: "true"}})
		all := strings.Join(lines, "\n")
		if strings.Contains(all, "cannot move") || strings.Contains(all, "stays where it is") {
			t.Errorf("%v: said as a failure:\n%s", err, all)
		}
		if want := fmt.Sprintf("%d (true) has ended: nothing to move out of cgroup /sys/fs/cgroup/contain-1", pid); !strings.Contains(all, want) {
			t.Errorf("%v: -v does not say %q:\n%s", err, want, all)
		}
	}
}
