//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

func TestExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"own status 0", []string{"true"}, 0},
		{"own status 3", []string{"sh", "-c", "exit 3"}, 3},
		{"own status 255", []string{"sh", "-c", "exit 255"}, 255},
		{"killed by USR1", []string{"sh", "-c", "kill -USR1 $$"}, 128 + 10},
		{"killed by KILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
		{"timeout", []string{"-t", "0.2", "sleep", "30"}, 124},
		{"timeout, command exits 0 on TERM", []string{"-t", "0.2", "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}, 124},
		{"timeout with -s KILL", []string{"-t", "0.2", "-s", "KILL", "sleep", "30"}, 137},
		{"timeout then --kill-after", []string{"-t", "0.2", "-k", "0.3", "sh", "-c", "trap '' TERM; sleep 30"}, 137},
		{"timeout with signal 0 then --kill-after", []string{"-t", "0.1", "-s", "0", "-k", "0.2", "sleep", "30"}, 137},
		{"timeout, --kill-after not needed", []string{"-t", "0.2", "-k", "5", "sleep", "30"}, 124},
		{"--preserve-status: killed by TERM", []string{"--preserve-status", "-t", "0.2", "sleep", "30"}, 143},
		{"--preserve-status: exits 7 on TERM", []string{"--preserve-status", "-t", "0.2", "sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.05; done"}, 7},
		{"--preserve-status with --kill-after", []string{"--preserve-status", "-t", "0.1", "-k", "0.2", "sh", "-c", "trap '' TERM; sleep 30"}, 137},
		{"timeout 0 disables", []string{"-t", "0", "sh", "-c", "sleep 0.3; exit 4"}, 4},
		{"timeout not reached", []string{"-t", "30", "sh", "-c", "exit 5"}, 5},
		{"named timeout signal", []string{"-t", "0.2", "-s", "SIGUSR1", "--preserve-status", "sleep", "30"}, 128 + 10},
		{"numbered timeout signal", []string{"-t", "0.2", "-s", "2", "--preserve-status", "sleep", "30"}, 128 + 2},
		{"not found", []string{"contain-no-such-command"}, 127},
		{"not found by path", []string{filepath.Join(dir, "missing")}, 127},
		{"not executable", []string{notExec}, 126},
		{"a directory", []string{dir}, 126},
		{"contain failed: bad option", []string{"--no-such-option", "true"}, 125},
		{"arguments after COMMAND are COMMAND's", []string{"sh", "-c", "exit $#", "sh", "-t", "5", "--bogus"}, 3},
		{"help as COMMAND is not contain's help", []string{"help"}, 127},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run"}, c.args...)
			if !strings.HasPrefix(c.args[0], "-") {
				args = append([]string{"run", "--"}, c.args...)
			}
			wantCode(t, run(t, runOpts{}, args...), c.want)
		})
	}
}

// TestStartErrorKeepsCgroup: a COMMAND that cannot be executed (not
// executable, not found) is 126 or 127 with the cgroup contain made: the
// exec's error is not taken for the cgroup's refusal, which would have
// contain drop the cgroup and try again without it.
func TestStartErrorKeepsCgroup(t *testing.T) {
	t.Parallel()
	requireRoot(t, "a cgroup of the run's own")
	if runtime.GOARCH != "amd64" {
		t.Skipf("on %s COMMAND starts with Go's fork, whose exec errors cannot be told from the clone's", runtime.GOARCH)
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{{notExec, 126}, {filepath.Join(dir, "missing"), 127}} {
		res := run(t, runOpts{}, "run", "-v", "--", c.path)
		wantCode(t, res, c.want)
		if strings.Contains(res.stderr, "retrying without it") || !strings.Contains(res.stderr, "contain: cannot run "+c.path) {
			t.Errorf("%s: the cgroup was dropped, or no error was said:\n%s", c.path, res.stderr)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "missing COMMAND"},
		{[]string{"run", "--"}, "missing COMMAND"},
		{[]string{"run", "--bogus", "true"}, "unknown option --bogus (see contain run --help)"},
		{[]string{"run", "-t", "abc", "true"}, `invalid duration "abc"`},
		{[]string{"run", "-t", "-1", "true"}, `invalid duration "-1"`},
		{[]string{"run", "-t", "5x", "true"}, `invalid duration "5x"`},
		{[]string{"run", "-t", "", "true"}, `invalid duration ""`},
		{[]string{"run", "-t", "nan", "true"}, `invalid duration "nan"`},
		{[]string{"run", "-k", "1y", "true"}, `invalid duration "1y"`},
		{[]string{"run", "-g", "soon", "true"}, `invalid duration "soon"`},
		{[]string{"run", "-s", "NOPE", "true"}, `invalid signal "NOPE"`},
		{[]string{"run", "-s", "65", "true"}, `invalid signal "65"`},
		{[]string{"run", "-s", "-1", "true"}, `invalid signal "-1"`},
		{[]string{"run", "-o", "", "true"}, "invalid originator name"},
		{[]string{"run", "-o", "has space", "true"}, "invalid originator name"},
		{[]string{"run", "-o", "A:B", "true"}, "invalid originator name"},
		{[]string{"run", "-o", strings.Repeat("x", 65), "true"}, "invalid originator name"},
		{[]string{"run", "-d", "-t", "5", "true"}, "--detach cannot be combined"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			res := run(t, runOpts{}, c.args...)
			wantCode(t, res, 125)
			wantOneErrorLine(t, res.stderr, c.want)
			// One form for every command's usage errors.
			if !strings.HasPrefix(res.stderr, "contain: run: ") {
				t.Errorf("stderr %q, want it to begin \"contain: run: \"", res.stderr)
			}
		})
	}
	t.Run("bare contain", func(t *testing.T) {
		res := run(t, runOpts{})
		wantCode(t, res, 2)
		wantOneErrorLine(t, res.stderr, "missing command")
		if res.stdout != "" {
			t.Errorf("stdout %q: usage goes to stderr", res.stdout)
		}
	})
	t.Run("bad originator from the environment", func(t *testing.T) {
		res := run(t, runOpts{env: []string{"CONTAIN_ORIGINATOR=no/slash"}}, "run", "true")
		wantCode(t, res, 125)
		wantOneErrorLine(t, res.stderr, "invalid originator name")
	})
	t.Run("unknown command", func(t *testing.T) {
		res := run(t, runOpts{}, "frobnicate")
		wantCode(t, res, 2)
		wantOneErrorLine(t, res.stderr, `unknown command "frobnicate"`)
	})
}

// wantOneErrorLine checks that stderr is exactly one "contain: ..." line
// containing want.
func wantOneErrorLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || !strings.Contains(lines[0], want) {
		t.Fatalf("stderr = %q, want one line \"contain: ...%s...\"", stderr, want)
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"help", "run"}, {"run", "-h"}} {
		res := run(t, runOpts{}, args...)
		wantCode(t, res, 0)
		if !strings.Contains(res.stdout, "run") || !strings.Contains(res.stdout, "USAGE") {
			t.Errorf("%q printed %q", args, res.stdout)
		}
	}
	res := run(t, runOpts{}, "run", "--help")
	for _, flag := range []string{"--originator", "--timeout", "--signal", "--kill-after", "--preserve-status", "--grace", "--detach", "--verbose", "CONTAIN_ORIGINATOR"} {
		if !strings.Contains(res.stdout, flag) {
			t.Errorf("run --help does not mention %s", flag)
		}
	}
	res = run(t, runOpts{}, "--version")
	wantCode(t, res, 0)
	if !regexp.MustCompile(`^contain version \S+\n$`).MatchString(res.stdout) {
		t.Errorf("--version printed %q", res.stdout)
	}
}

func TestTag(t *testing.T) {
	t.Parallel()
	printTag := []string{"sh", "-c", `echo "$RUNNING_PROCESS_ORIGINATOR|$RUNNING_PROCESS_IS_DAEMON"`}
	cases := []struct {
		name  string
		flags []string
		env   []string
		tool  string
	}{
		{"default", nil, nil, "CONTAIN"},
		{"--originator", []string{"--originator", "MY_tool-1.0"}, nil, "MY_tool-1.0"},
		{"-o", []string{"-o", "X"}, nil, "X"},
		{"CONTAIN_ORIGINATOR", nil, []string{"CONTAIN_ORIGINATOR=FROMENV"}, "FROMENV"},
		{"flag beats environment", []string{"-o", "FLAG"}, []string{"CONTAIN_ORIGINATOR=FROMENV"}, "FLAG"},
		{"inherited value replaced", nil, []string{"RUNNING_PROCESS_ORIGINATOR=OLD:1", "RUNNING_PROCESS_IS_DAEMON=1"}, "CONTAIN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"run"}, c.flags...), "--")
			res := run(t, runOpts{env: c.env}, append(args, printTag...)...)
			wantCode(t, res, 0)
			want := fmt.Sprintf("%s:%d|\n", c.tool, res.pid)
			if res.stdout != want {
				t.Fatalf("the command saw %q, want %q (contain's PID is %d)", res.stdout, want, res.pid)
			}
		})
	}
	t.Run("every process of the group", func(t *testing.T) {
		dir := t.TempDir()
		// A double-forked grandchild in a new session, read from outside
		// through /proc while it runs.
		script := `setsid sh -c 'echo $$ > ` + dir + `/pid; exec sleep 30' &
			while [ ! -s ` + dir + `/pid ]; do sleep 0.01; done
			while [ ! -f ` + dir + `/done ]; do sleep 0.01; done`
		cmd, wait := startContain(t, runOpts{env: []string{"RUNNING_PROCESS_ORIGINATOR=STALE:7"}}, "run", "-g", "0.2", "--", "sh", "-c", script)
		waitFor(t, "the grandchild to start", 10*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(dir, "pid"))
			return err == nil
		})
		pid := readPID(t, dir, "pid")
		killOnCleanup(t, pid)
		waitFor(t, "the grandchild to exec sleep", 10*time.Second, func() bool {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			return strings.TrimSpace(string(b)) == "sleep"
		})
		if got, want := environOf(t, pid)["RUNNING_PROCESS_ORIGINATOR"], fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid); got != want {
			t.Errorf("grandchild tag = %q, want %q", got, want)
		}
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
		wantCode(t, wait(), 0)
		if exists(pid) {
			t.Errorf("grandchild %d survived", pid)
		}
	})
}

// leftovers is a command that leaves one process of each kind behind and
// records their PIDs: a background job, a setsid escapee, a double fork, a
// child that ignores SIGTERM, and a real daemonizing program (ssh-agent);
// and the cgroup the setsid escapee was in.
func leftovers(dir string) string {
	return escapeeTree(dir, leftoverKinds...) + "cat /proc/$(cat $D/setsid)/cgroup > $D/setsid.cgroup\nexit 0\n"
}

var leftoverKinds = []string{"background", "setsid", "doublefork", "ignoresterm", "daemon"}

func TestLeftoversAreKilled(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "ssh-agent", "openssh-client") // the real daemon
	type mode struct {
		name       string
		nobody     bool
		wantCgroup *bool // nil: whichever this user may have
	}
	yes, no := true, false
	modes := []mode{{"root with cgroup", false, &yes}, {"nobody without cgroup", true, &no}}
	if os.Geteuid() != 0 {
		// Root runs both paths; anyone else runs the one they have.
		modes = []mode{{"unprivileged", false, nil}}
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := sharedDir(t)
			res := run(t, runOpts{asNobody: m.nobody}, "run", "-v", "-g", "0.5", "--", "sh", "-c", leftovers(dir))
			pids := map[string]int{}
			for _, kind := range leftoverKinds {
				pids[kind] = readPID(t, dir, kind)
				killOnCleanup(t, pids[kind])
			}
			wantCode(t, res, 0)
			for _, kind := range leftoverKinds {
				if exists(pids[kind]) {
					t.Errorf("%s %d is still there after contain returned", kind, pids[kind])
				}
			}
			cg := regexp.MustCompile(`containment: .*cgroup (/\S+)`).FindStringSubmatch(res.stderr)
			inCgroup, _ := os.ReadFile(filepath.Join(dir, "setsid.cgroup"))
			switch {
			case m.wantCgroup == nil:
			case *m.wantCgroup:
				if cg == nil {
					t.Fatalf("no cgroup in use as root; stderr:\n%s", res.stderr)
				}
				if want := fmt.Sprintf("contain-%d\n", res.pid); !strings.HasSuffix(string(inCgroup), want) {
					t.Errorf("the setsid escapee was in cgroup %q, want .../%s", inCgroup, want)
				}
				if _, err := os.Stat(cg[1]); !os.IsNotExist(err) {
					t.Errorf("cgroup %s left behind (stat: %v)", cg[1], err)
				}
			default:
				if cg != nil || !strings.Contains(res.stderr, "falling back") {
					t.Errorf("want the fallback without cgroup, said so on stderr; stderr:\n%s", res.stderr)
				}
			}
			if left := tagged(fmt.Sprintf("CONTAIN:%d", res.pid)); len(left) > 0 {
				t.Errorf("processes tagged with this session are left: %v", left)
			}
			if want := fmt.Sprintf("killed %d", pids["ignoresterm"]); !strings.Contains(res.stderr, want) {
				t.Errorf("verbose output does not say %q:\n%s", want, res.stderr)
			}
			if !strings.Contains(res.stderr, "subreaper") {
				t.Errorf("verbose output does not name the subreaper layer:\n%s", res.stderr)
			}
		})
	}
	// The same command without contain: its leftovers do survive, so the
	// checks above can fail.
	t.Run("control without contain", func(t *testing.T) {
		for _, pid := range survivors(t, leftovers, leftoverKinds) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// survivors runs script(dir) without contain and checks that each of kinds
// (the PIDs it wrote to dir) survives it: the control that shows a check
// of contain can fail. It returns their PIDs, to be killed by the caller.
func survivors(t *testing.T, script func(dir string) string, kinds []string) map[string]int {
	t.Helper()
	dir := sharedDir(t)
	// No pipes: the leftovers would hold them open.
	if err := exec.Command("sh", "-c", script(dir)).Run(); err != nil {
		t.Fatalf("control run: %v", err)
	}
	pids := map[string]int{}
	for _, kind := range kinds {
		pid := readPID(t, dir, kind)
		pids[kind] = pid
		killOnCleanup(t, pid)
		if !alive(pid) {
			t.Errorf("control: %s %d did not survive without contain", kind, pid)
		}
	}
	return pids
}

func TestTimeoutClosesTheGroup(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			dir := sharedDir(t)
			script := escapeeTree(dir, "background", "setsid") + "wait"
			res := run(t, runOpts{asNobody: nobody}, "run", "-t", "0.3", "--", "sh", "-c", script)
			wantCode(t, res, 124)
			for _, kind := range []string{"background", "setsid"} {
				pid := readPID(t, dir, kind)
				killOnCleanup(t, pid)
				if exists(pid) {
					t.Errorf("%s %d survived the timeout", kind, pid)
				}
			}
		})
	}
}

// TestAdoptedZombiesAreReaped: orphans re-parented to contain are reaped
// while COMMAND runs, and COMMAND's own status is never taken by that.
func TestAdoptedZombiesAreReaped(t *testing.T) {
	t.Parallel()
	script := `for i in 1 2 3 4 5 6 7 8; do (sleep 0.0$i &); done
		sleep 0.5
		ps -o pid=,stat=,comm= --ppid $PPID | awk '$2 ~ /^Z/' 
		for i in 1 2 3 4 5 6 7 8 9; do (true &); done
		exit 42`
	for i := 0; i < 5; i++ {
		res := run(t, runOpts{}, "run", "--", "sh", "-c", script)
		wantCode(t, res, 42)
		if res.stdout != "" {
			t.Fatalf("zombies under contain while the command ran:\n%s", res.stdout)
		}
	}
}

func TestStdioAndWorkdirPassThrough(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{stdin: "hello from stdin\n"}, "run", "--", "sh", "-c", "cat; pwd; echo err >&2")
	wantCode(t, res, 0)
	wd, _ := os.Getwd()
	if res.stdout != "hello from stdin\n"+wd+"\n" || res.stderr != "err\n" {
		t.Fatalf("stdout %q, stderr %q", res.stdout, res.stderr)
	}
}

// signalScript traps sig in the main shell and in a background job; the
// main shell exits 7 once both have seen it. A non-interactive shell starts
// background jobs with SIGINT ignored, beyond any trap, so for INT only the
// main shell is checked.
func signalScript(dir, sig string) string {
	// sh and coreutils alone (no grep: a machine with only Go).
	waitJob := `n=0; while case "$(cat $D/got 2>/dev/null)" in *job*) false;; *) true;; esac && [ $n -lt 500 ]; do sleep 0.01; n=$((n+1)); done;`
	if sig == "INT" {
		waitJob = ""
	}
	return fmt.Sprintf(`D=%s
(trap 'echo job >> $D/got; exit 0' %s; echo $$ > $D/job; while :; do sleep 0.02; done) &
trap 'echo main >> $D/got; %s exit 7' %s
while [ ! -s $D/job ]; do sleep 0.01; done
echo ready > $D/ready
while :; do sleep 0.02; done`, dir, sig, waitJob, sig)
}

func TestForwardedSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			name := signalName(sig)
			cmd, wait := startContain(t, runOpts{}, "run", "--", "sh", "-c", signalScript(dir, name))
			waitFor(t, "the command to be ready", 10*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(dir, "ready"))
				return err == nil
			})
			cmd.Process.Signal(sig)
			res := wait()
			wantCode(t, res, 7)
			got, _ := os.ReadFile(filepath.Join(dir, "got"))
			if strings.Count(string(got), "main") != 1 {
				t.Errorf("the main shell saw %s %d times, want once", name, strings.Count(string(got), "main"))
			}
			if sig != syscall.SIGINT && !strings.Contains(string(got), "job") {
				t.Errorf("%s did not reach the background job (got %q)", name, got)
			}
		})
	}
}

func signalName(sig syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT", syscall.SIGHUP: "HUP", syscall.SIGUSR1: "USR1"}[sig]
}

// TestToldToStop: a command that ignores SIGTERM is killed a grace period
// after contain is told to stop, leftovers included.
func TestToldToStop(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			dir := sharedDir(t)
			script := `trap '' TERM; setsid sh -c 'echo $$ > ` + dir + `/setsid; exec sleep 300' &
				while [ ! -s ` + dir + `/setsid ]; do sleep 0.01; done
				echo $$ > ` + dir + `/main; sleep 300`
			cmd, wait := startContain(t, runOpts{asNobody: nobody}, "run", "-g", "0.3", "--", "sh", "-c", script)
			waitFor(t, "the command to be ready", 10*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(dir, "main"))
				return err == nil
			})
			main, escapee := readPID(t, dir, "main"), readPID(t, dir, "setsid")
			killOnCleanup(t, main)
			killOnCleanup(t, escapee)
			cmd.Process.Signal(syscall.SIGTERM)
			res := wait()
			wantCode(t, res, 137)
			if exists(main) || exists(escapee) {
				t.Fatalf("left behind: main %v, escapee %v", exists(main), exists(escapee))
			}
		})
	}
}

// TestPdeathsigHolds: COMMAND dies with contain even when contain is killed
// with SIGKILL, long after the thread that started it could have gone.
func TestPdeathsigHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, wait := startContain(t, runOpts{}, "run", "--", "sh", "-c", "echo $$ > "+dir+"/pid; exec sleep 300")
	waitFor(t, "the command to start", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		return len(b) > 0
	})
	pid := readPID(t, dir, "pid")
	killOnCleanup(t, pid)
	// Give the Go runtime time to retire idle threads; the child must live.
	time.Sleep(300 * time.Millisecond)
	if !exists(pid) {
		t.Fatal("the command died while contain was running")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	wait()
	waitFor(t, "the command to die with contain", time.Second, func() bool { return !alive(pid) })
}

func TestDetach(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{}, "run", "--detach", "-o", "DAEMONS", "--", "sleep", "300")
	wantCode(t, res, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(res.stdout))
	if err != nil {
		t.Fatalf("--detach printed %q, want a PID", res.stdout)
	}
	killOnCleanup(t, pid)
	if !exists(pid) {
		t.Fatalf("detached command %d is not running", pid)
	}
	env := environOf(t, pid)
	if want := fmt.Sprintf("DAEMONS:%d", res.pid); env["RUNNING_PROCESS_ORIGINATOR"] != want || env["RUNNING_PROCESS_IS_DAEMON"] != "1" {
		t.Errorf("detached tag %q daemon %q, want %q and 1", env["RUNNING_PROCESS_ORIGINATOR"], env["RUNNING_PROCESS_IS_DAEMON"], want)
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if sid := fields[3]; sid != strconv.Itoa(pid) {
		t.Errorf("detached command is in session %s, want its own (%d)", sid, pid)
	}
	// Its output goes nowhere near contain's: a $(...) around contain
	// returns at once.
	out, err := exec.Command("sh", "-c", bin+" run -d -- sh -c 'echo leaked; exec sleep 300'").Output()
	if err != nil || !regexp.MustCompile(`^\d+\n$`).Match(out) {
		t.Fatalf("$(contain run -d ...) = %q, %v", out, err)
	}
	p2, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	killOnCleanup(t, p2)
	t.Run("not found", func(t *testing.T) {
		wantCode(t, run(t, runOpts{}, "run", "-d", "--", "contain-no-such-command"), 127)
	})
}

// TestSecondStopKillsAtOnce: a second TERM while the grace period runs
// kills the group without waiting for the rest of it (100 s here, more than
// the test's one-minute limit on any run).
func TestSecondStopKillsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `trap '' TERM; echo $$ > ` + dir + `/main; sleep 300`
	cmd, wait := startContain(t, runOpts{}, "run", "-v", "-g", "100", "--", "sh", "-c", script)
	waitFor(t, "the command to start", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "main"))
		return len(b) > 0
	})
	main := readPID(t, dir, "main")
	killOnCleanup(t, main)
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	if !alive(main) {
		t.Fatal("the command, which ignores TERM, died on the first one")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	res := wait()
	wantCode(t, res, 137)
	if alive(main) {
		t.Fatalf("command %d survived", main)
	}
	if !strings.Contains(res.stderr, "killing the group") {
		t.Errorf("verbose output does not say the group was killed:\n%s", res.stderr)
	}
}

// TestGraceZero: with -g 0 leftovers get SIGKILL straight away, even those
// that would have handled SIGTERM.
func TestGraceZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `sh -c 'trap "echo got TERM > ` + dir + `/term; exit 0" TERM; echo $$ > ` + dir + `/job; while :; do sleep 0.05; done' &
		while [ ! -s ` + dir + `/job ]; do sleep 0.01; done`
	res := run(t, runOpts{}, "run", "-g", "0", "--", "sh", "-c", script)
	wantCode(t, res, 0)
	job := readPID(t, dir, "job")
	killOnCleanup(t, job)
	if exists(job) {
		t.Fatalf("leftover %d survived", job)
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err == nil {
		t.Fatalf("with -g 0 the leftover got SIGTERM first")
	}
}

// testCgroup makes a cgroup for one test beside the test's own members;
// it is removed when the test ends.
func testCgroup(t *testing.T, name string) string {
	t.Helper()
	requireRoot(t, "making a test cgroup")
	own := ownCgroupDir()
	if own == "" {
		t.Fatal("no cgroup v2 hierarchy found")
	}
	dir := filepath.Join(own, fmt.Sprintf("contain-test-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing test cgroup: %v", err)
		}
	})
	return dir
}

// runIn runs contain -v from a shell that first moves itself into cgroup
// parent, with a background job; it checks that the job is gone and returns
// what contain said.
func runIn(t *testing.T, parent string) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec %s run -v -- sh -c 'sleep 300 & echo $! > %s/job'`, parent, bin, dir)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := readPID(t, dir, "job")
	killOnCleanup(t, job)
	if exists(job) {
		t.Errorf("background job %d survived", job)
	}
	if strings.Contains(string(out), "containment: process group, pdeathsig, subreaper, cgroup") {
		t.Errorf("contain claims a cgroup:\n%s", out)
	}
	return string(out)
}

// TestCgroupRefusedFallsBack: as root, where no cgroup can be made or the
// kernel refuses to clone into it, contain says so and contains with the
// other layers, leaving no cgroup behind.
func TestCgroupRefusedFallsBack(t *testing.T) {
	t.Parallel()
	t.Run("mkdir refused", func(t *testing.T) {
		parent := testCgroup(t, "nochild")
		if err := os.WriteFile(filepath.Join(parent, "cgroup.max.descendants"), []byte("0"), 0); err != nil {
			t.Fatal(err)
		}
		out := runIn(t, parent)
		if !strings.Contains(out, "cannot create cgroup "+parent+"/contain-") || !strings.Contains(out, "falling back") {
			t.Errorf("contain did not say it fell back:\n%s", out)
		}
	})
	t.Run("clone refused", func(t *testing.T) {
		// A threaded child makes parent a threaded domain; a new domain
		// group below it is "domain invalid", which CLONE_INTO_CGROUP
		// refuses with EOPNOTSUPP.
		parent := testCgroup(t, "threaded")
		if err := os.Mkdir(filepath.Join(parent, "t"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "t", "cgroup.type"), []byte("threaded"), 0); err != nil {
			t.Fatal(err)
		}
		out := runIn(t, parent)
		if !strings.Contains(out, "cannot start inside cgroup "+parent+"/contain-") || !strings.Contains(out, "retrying without it") {
			t.Errorf("contain did not say it retried without the cgroup:\n%s", out)
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "contain-") {
				t.Errorf("cgroup %s left behind", e.Name())
			}
		}
	})
}

// TestNestedContain: an inner contain killed with SIGKILL leaves its
// command's leftovers and its own cgroup inside the outer one, which ends
// and removes both.
func TestNestedContain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inner := fmt.Sprintf(`%s run -- sh -c 'sleep 300 & echo $! > %s/job; kill -9 $PPID'; exit 0`, bin, dir)
	res := run(t, runOpts{}, "run", "-v", "--", "sh", "-c", inner)
	wantCode(t, res, 0)
	job := readPID(t, dir, "job")
	killOnCleanup(t, job)
	if exists(job) {
		t.Fatalf("the inner command's job %d survived both", job)
	}
}

// TestIgnoredSignalsStayIgnored: started with HUP ignored (nohup), contain
// and COMMAND keep ignoring it, as COMMAND would without contain.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	t.Parallel()
	inner := `kill -HUP $PPID; kill -HUP $$; sleep 0.2; echo survived`
	out, err := exec.Command("sh", "-c", `trap "" HUP; exec "$0" run -- sh -c "$1"`, bin, inner).CombinedOutput()
	if err != nil || string(out) != "survived\n" {
		t.Fatalf("with HUP ignored: %v, output %q; want survived", err, out)
	}
	// Without the inherited SIG_IGN, the same HUP ends both.
	res := run(t, runOpts{}, "run", "--", "sh", "-c", inner)
	if res.code != 128+1 || strings.Contains(res.stdout, "survived") {
		t.Fatalf("without HUP ignored: status %d, output %q; want 129", res.code, res.stdout)
	}
}

// TestForkingLeftover: a leftover that ignores SIGTERM and forks without
// pause while the group is closed; contain returns only when nothing of the
// session is left.
func TestForkingLeftover(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			script := `(trap "" TERM; while :; do (sleep 300 &); (trap "" TERM; sleep 300 &); done) & sleep 0.3`
			res := run(t, runOpts{asNobody: nobody}, "run", "-g", "0.3", "--", "sh", "-c", script)
			wantCode(t, res, 0)
			if left := tagged(fmt.Sprintf("CONTAIN:%d", res.pid)); len(left) > 0 {
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Fatalf("%d processes of the session survived: %v", len(left), left)
			}
		})
	}
}

// TestTaggedFinds: the helper that finds what is left of a session does
// find a tagged process, so the checks built on it can fail.
func TestTaggedFinds(t *testing.T) {
	t.Parallel()
	value := fmt.Sprintf("HELPER:%d", os.Getpid())
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+value)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	// Until the child has exec'd, its environment is still the test's.
	var got []int
	waitFor(t, "the tagged sleep to be found", 5*time.Second, func() bool {
		got = tagged(value)
		return len(got) == 1 && got[0] == cmd.Process.Pid
	})
}
