//go:build linux || darwin

package run

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
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
		r.sys = newOS(r)
		s := &sparing{r: r}
		s.spare([]proc.Entry{{PID: pid, Start: start, Comm: "true"}})
		all := strings.Join(lines, "\n")
		if strings.Contains(all, "cannot move") || strings.Contains(all, "stays where it is") {
			t.Errorf("%v: said as a failure:\n%s", err, all)
		}
		if want := fmt.Sprintf("%d (true) has ended: nothing to move out of cgroup /sys/fs/cgroup/contain-1", pid); !strings.Contains(all, want) {
			t.Errorf("%v: -v does not say %q:\n%s", err, want, all)
		}
		if got := s.spared(); len(got) != 1 || got[0] != (proc.ID{PID: pid, Start: start}) {
			t.Errorf("%v: spared %v, want %d", err, got, pid)
		}
	}
}

// TestNoDaemons: without --allow-daemons the run's daemons are the null
// object: the tracker is asked no Daemon question, nothing is bound or
// listened on, nothing is spared, and the reaper has no daemon to wait
// for.
func TestNoDaemons(t *testing.T) {
	r := &runner{log: func(f string, a ...any) { t.Errorf("said: "+f, a...) }}
	d := newDaemons(r)
	if _, ok := d.(noDaemons); !ok {
		t.Fatalf("newDaemons without --allow-daemons: %T, want noDaemons", d)
	}
	tr := track.New(1, 2, 3, "T:1")
	d.bind()
	d.judge(tr)
	d.listen()()
	d.spare([]proc.Entry{{PID: 5, Start: 6}})
	if tr.Daemon != nil || d.onlySpared() || d.isSpared(proc.ID{PID: 5, Start: 6}) || d.spared() != nil {
		t.Errorf("noDaemons did something: Daemon set %t, onlySpared %t, spared %v", tr.Daemon != nil, d.onlySpared(), d.spared())
	}
	r.o.AllowDaemons = true
	if _, ok := newDaemons(r).(*sparing); !ok {
		t.Errorf("newDaemons with --allow-daemons: %T, want *sparing", newDaemons(r))
	}
}
