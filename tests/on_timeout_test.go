//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOnTimeout: the hook runs when the timeout fires, before the timeout
// signal reaches COMMAND (it sees COMMAND alive, and COMMAND's TERM trap
// has not run), with the documented environment, outside the session;
// its status and output change nothing of contain's.
func TestOnTimeout(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			command := fmt.Sprintf(`trap 'echo term > %[1]s/term; exit 0' TERM; echo $$ > %[1]s/command; while :; do sleep 0.05; done`, dir)
			hook := fmt.Sprintf(`{ kill -0 $CONTAIN_COMMAND_PID && echo alive; test -e %[1]s/term && echo signalled; echo "$CONTAIN_COMMAND_PID $CONTAIN_SESSION $CONTAIN_PID"; echo "tag=$RUNNING_PROCESS_ORIGINATOR"; } > %[1]s/hook; echo from-the-hook; exit 3`, dir)
			res := run(t, m.o, "run", "-t", "0.5", "--on-timeout", hook, "--", "sh", "-c", command)
			wantCode(t, res, 124)
			cmdPID := readPID(t, dir, "command")
			b, err := os.ReadFile(filepath.Join(dir, "hook"))
			if err != nil {
				t.Fatalf("the hook did not run: %v\nstderr: %s", err, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			want := []string{"alive", fmt.Sprintf("%d CONTAIN:%d %d", cmdPID, res.pid, res.pid), "tag="}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("the hook saw %q, want %q", lines, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
				t.Errorf("COMMAND did not get the timeout signal after the hook: %v", err)
			}
			if res.stdout != "" || !strings.Contains(res.stderr, "from-the-hook") {
				t.Errorf("the hook's output: stdout %q, stderr %q; want it on stderr only", res.stdout, res.stderr)
			}
		})
	}
}

// TestOnTimeoutBounded: a hook that would run far longer than the grace
// period is ended with what it started, and the timeout signal follows.
func TestOnTimeoutBounded(t *testing.T) {
	t.Parallel()
	for _, m := range reportModes(t) {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			hook := fmt.Sprintf(`sleep 60 & echo $! > %[1]s/child; echo $$ > %[1]s/hook; sleep 60`, dir)
			began := time.Now()
			res := run(t, m.o, "run", "-v", "-g", "1", "-t", "0.2", "--on-timeout", hook, "--", "sleep", "60")
			took := time.Since(began)
			wantCode(t, res, 124)
			// 0.2s, the hook's second, the close: generous on a busy machine.
			if took > 8*time.Second {
				t.Errorf("contain took %v: the hook delayed the kill beyond the grace period", took)
			}
			for _, name := range []string{"hook", "child"} {
				pid := readPID(t, dir, name)
				killOnCleanup(t, pid)
				if alive(pid) {
					t.Errorf("the hook's %s %d outlived it", name, pid)
				}
			}
			if !strings.Contains(res.stderr, "on-timeout: still running after the grace period of 1s") {
				t.Errorf("-v does not say the hook was ended:\n%s", res.stderr)
			}
		})
	}
}

// TestOnTimeoutOptions: the hook runs once, not at all with -g 0, and
// bad uses are refused before COMMAND runs.
func TestOnTimeoutOptions(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	count := filepath.Join(dir, "count")
	res := run(t, runOpts{}, "run", "-v", "-g", "0", "-t", "0.2", "--on-timeout", "echo ran >> "+count, "--", "sleep", "60")
	wantCode(t, res, 124)
	if _, err := os.Stat(count); err == nil || !strings.Contains(res.stderr, "not running") {
		t.Errorf("-g 0: the hook ran, or -v did not say why not:\n%s", res.stderr)
	}
	// SIGALRM after the timer: the signal again, not the hook.
	res = run(t, runOpts{}, "run", "-t", "0.2", "-s", "USR1", "--on-timeout", "echo ran >> "+count,
		"--", "sh", "-c", `trap 'kill -ALRM $PPID' USR1; i=0; while [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done`)
	wantCode(t, res, 124)
	if b, _ := os.ReadFile(count); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the hook ran %d times, want once", strings.Count(string(b), "ran"))
	}
	marker := filepath.Join(dir, "ran")
	for _, args := range [][]string{
		{"--on-timeout", "", "--", "touch", marker},
		{"--on-timeout", " ", "--", "touch", marker},
		{"-d", "--on-timeout", "true", "--", "touch", marker},
		{"-d", "--allow-daemons", "--", "touch", marker},
	} {
		res := run(t, runOpts{}, append([]string{"run"}, args...)...)
		wantCode(t, res, 125)
		if n := strings.Count(res.stderr, "\n"); n != 1 || !strings.HasPrefix(res.stderr, "contain: ") {
			t.Errorf("%q: stderr %q, want one line", args, res.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%q: COMMAND ran", args)
		}
	}
}

// TestOnTimeoutGraceZeroSaid: with -g 0 the hook cannot run, and contain
// says so as the run starts, in one line on stderr, without -v (before,
// only -v said it, and only when the timeout fired); the run is the
// same, and nothing is said where the hook can run.
func TestOnTimeoutGraceZeroSaid(t *testing.T) {
	t.Parallel()
	const line = "contain: --on-timeout will not run: the grace period is 0 (-g 0), which leaves it no time; give it one with -g\n"
	res := run(t, runOpts{}, "run", "-g", "0", "--on-timeout", "echo ran", "--", "sh", "-c", "echo out")
	wantCode(t, res, 0)
	if res.stderr != line || res.stdout != "out\n" {
		t.Errorf("-g 0 --on-timeout: stdout %q, stderr %q; want the one line %q", res.stdout, res.stderr, line)
	}
	res = run(t, runOpts{}, "run", "-g", "0", "-t", "0.2", "--on-timeout", "echo ran", "--", "sleep", "60")
	wantCode(t, res, 124)
	if res.stderr != line {
		t.Errorf("-g 0 -t 0.2 --on-timeout: stderr %q, want the one line %q", res.stderr, line)
	}
	res = run(t, runOpts{}, "run", "-g", "1", "--on-timeout", "echo ran", "--", "true")
	if res.stderr != "" {
		t.Errorf("-g 1 --on-timeout: stderr %q, want nothing", res.stderr)
	}
}
