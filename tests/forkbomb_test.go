//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// v1Pids is the cgroup-v1 pids hierarchy of a hybrid layout: a group in it
// caps a fork bomb whatever contain does, and counts its tasks.
const v1Pids = "/sys/fs/cgroup/pids"

// TestForkBombEnded: a fork bomb that ignores SIGTERM and forks again as
// soon as a place is free (each process every 20 ms; a cgroup-v1 pids
// group caps it at 150 tasks, so that a contain that loses cannot take the
// machine) is ended by the timeout and its kill in every mode, and the
// kill meets a tree that no longer forks: contain ends no more processes
// than the tree ever held at once, but for a few stragglers (straggle).
// Where there is no cgroup.kill, killing
// a tree that refills whatever is killed was a race: contain ended 310
// processes of a tree of 150 before it won (and lost it outright at 400:
// 124 processes outlived contain). Now the tree is stopped first (SIGSTOP
// to COMMAND's process group, then to every member until a scan finds
// none it has not stopped), then killed.
//
// Sequential: the bomb takes the CPUs while it lives.
func TestForkBombEnded(t *testing.T) {
	requireRoot(t, "a cgroup-v1 pids group caps the bomb, whatever contain does")
	testtool.Need(t, "perl", "perl-base")
	if _, err := os.Stat(filepath.Join(v1Pids, "cgroup.procs")); err != nil {
		t.Skipf("no cgroup-v1 pids hierarchy at %s to cap the bomb (a hybrid layout has one): %v", v1Pids, err)
	}
	const most = 150
	modes := reportModes(t)
	modes = append(modes, struct {
		name string
		o    runOpts
	}{"macos", runOpts{env: []string{macOSLayers}}})
	for _, m := range modes {
		for _, load := range []struct {
			name, perl string
			code       int
		}{
			// The timeout's SIGTERM goes to a tree held still (frozen, or
			// stopped while COMMAND lives), so every process of it gets
			// it: 124, and nothing is left for the kill.
			{"dies of SIGTERM", `while (1) { fork; select(undef, undef, undef, 0.02) }`, 124},
			{"ignores SIGTERM", `$SIG{TERM} = "IGNORE"; while (1) { fork; select(undef, undef, undef, 0.02) }`, 137},
		} {
			t.Run(m.name+"/"+load.name, func(t *testing.T) {
				forkBombRound(t, m.o, fmt.Sprintf("contain-test-bomb-%d-%s-%d", os.Getpid(), m.name, load.code), load.perl, load.code, most)
			})
		}
	}
}

// straggle is how many more processes than the tree held at once contain
// may end. perl blocks every signal around fork (rt_sigprocmask before
// and after the clone): a perl process that the stop catches as it enters
// fork has its fork restarted when it is continued, with the timeout's
// SIGTERM pending but still blocked, and so forks once more before it
// dies; contain ends that child as the group closes. A tree that refills
// faster than contain ends it would exceed the cap by far more (310 for a
// cap of 150, before the tree was stopped first); the stragglers were 1,
// in about 1 round in 50 of the modes without a cgroup.
func straggle(most int) int { return most / 10 }

// forkBombRound runs one bomb (perl code) under contain -t 0.3 -k 0.3, in
// a pids group of its own capped at most.
func forkBombRound(t *testing.T, o runOpts, name, perl string, code, most int) {
	cg := capGroup(t, name, most)
	dir := sharedDir(t)
	rep := filepath.Join(dir, "report.json")
	script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec perl -e '%s'`, cg, perl)
	res := run(t, o, "run", "--report", rep, "-t", "0.3", "-k", "0.3", "--", "sh", "-c", script)
	wantCode(t, res, code)
	if live := liveIn(cg); len(live) > 0 {
		t.Errorf("%d processes of the bomb outlived contain: %v", len(live), live)
	}
	peak, _ := os.ReadFile(filepath.Join(cg, "pids.peak"))
	r := readReport(t, rep)
	t.Logf("the tree held at most %s tasks; contain ended %d processes", bytes.TrimSpace(peak), len(r.EndedByContain))
	if n := len(r.EndedByContain); n > most+straggle(most) {
		t.Errorf("contain ended %d processes of a tree that never held more than %d at once: it forked on while contain ended it", n, most)
		phases := map[string]int{}
		for _, e := range r.EndedByContain {
			phases[fmt.Sprintf("%s %s, %s", e.Phase, e.Signal, e.EndedBy)]++
		}
		t.Logf("ended by contain, by phase, signal and end: %v; contain said:\n%s", phases, res.stderr)
	}
}

// capGroup makes a cgroup-v1 pids group of at most max tasks, which nobody
// may join too, and removes it at the end of the test, killing what is left
// in it (it may fork no more first).
func capGroup(t *testing.T, name string, max int) string {
	t.Helper()
	cg := filepath.Join(v1Pids, name)
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(cg, "pids.max"), []byte("0"), 0)
		for range 100 {
			pids := procsOf(cg)
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if p > 1 {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("cannot remove %s: %v", cg, err)
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cgroup.procs", "tasks"} {
		if err := os.Chown(filepath.Join(cg, f), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return cg
}

// procsOf lists the processes in a cgroup-v1 group, zombies included.
func procsOf(cg string) []int {
	b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// liveIn lists the processes in a cgroup-v1 group that are not zombies.
func liveIn(cg string) []int {
	var out []int
	for _, p := range procsOf(cg) {
		if alive(p) {
			out = append(out, p)
		}
	}
	return out
}
