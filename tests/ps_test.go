//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// psOutput is the part of `contain ps --format json` the tests read.
type psOutput struct {
	Sessions []struct {
		Originator struct {
			Value string `json:"value"`
			Tool  string `json:"tool"`
			PID   int    `json:"pid"`
		} `json:"originator"`
		State     string `json:"state"`
		Reason    string `json:"reason"`
		Count     int    `json:"count"`
		Processes []struct {
			PID     int      `json:"pid"`
			PPID    int      `json:"ppid"`
			State   string   `json:"state"`
			Daemon  bool     `json:"daemon"`
			Started string   `json:"started"`
			User    string   `json:"user"`
			UID     int      `json:"uid"`
			Argv    []string `json:"argv"`
			CPU     *float64 `json:"cpu_seconds"`
			RSS     *uint64  `json:"rss_bytes"`
			Absent  string   `json:"usage_absent"`
		} `json:"processes"`
		Totals struct {
			Processes int     `json:"processes"`
			CPU       float64 `json:"cpu_seconds"`
			RSS       uint64  `json:"rss_bytes"`
			Unknown   int     `json:"usage_unknown"`
		} `json:"totals"`
	} `json:"sessions"`
	Unreadable map[string]int `json:"unreadable"`
}

// reapOutput is the part of `contain reap --format json` the tests read.
type reapOutput struct {
	DryRun    bool `json:"dry_run"`
	Processes []struct {
		PID        int `json:"pid"`
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Skipped bool   `json:"skipped"`
		Result  string `json:"result"`
		Alive   bool   `json:"alive"`
	} `json:"processes"`
	Cgroups []struct {
		Dir    string `json:"dir"`
		Result string `json:"result"`
		Failed bool   `json:"failed"`
	} `json:"cgroups"`
	SkippedSessions []struct {
		Originator string `json:"originator"`
		State      string `json:"state"`
	} `json:"skipped_sessions"`
}

func decode[T any](t *testing.T, res result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\nstdout: %s\nstderr: %s", err, res.stdout, res.stderr)
	}
	return v
}

// uniqueTool is an originator name no other test uses, so that a test's
// ps and reap see only its own sessions.
func uniqueTool(t *testing.T) string {
	return fmt.Sprintf("T%x", time.Now().UnixNano())
}

// deadPID returns a PID that no process has or can have: above the
// kernel's pid_max. (A PID that just exited can be reused at once on a busy
// machine with a small pid_max, and then name a process older than the
// session's members.)
func deadPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return max + int(deadPIDs.Add(1))
}

var deadPIDs atomic.Int64

// exitedPID returns the PID of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// tagged process options.
type procOpts struct {
	daemon bool
	nobody bool
	env    []string
}

// startTagged starts argv (default: sleep 300) in its own session with
// RUNNING_PROCESS_ORIGINATOR=value, reaps it when it ends, and kills it
// when the test ends.
func startTagged(t *testing.T, value string, o procOpts, argv ...string) int {
	t.Helper()
	if len(argv) == 0 {
		argv = []string{"sleep", "300"}
	}
	env := append(withoutTag(os.Environ()), "RUNNING_PROCESS_ORIGINATOR="+value)
	if o.daemon {
		env = append(env, "RUNNING_PROCESS_IS_DAEMON=1")
	}
	pid := startAs(t, o.nobody, append(env, o.env...), argv...)
	// And whatever it started that carries the tag.
	t.Cleanup(func() {
		for _, p := range tagged(value) {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	// Wait until the tag can be read and setpriv, if any, has exec'd.
	waitFor(t, "the tagged process to start", 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.Contains(string(b), "RUNNING_PROCESS_ORIGINATOR="+value+"\x00") && string(comm) != "setpriv\n"
	})
	return pid
}

func withoutTag(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "RUNNING_PROCESS_ORIGINATOR=") || strings.HasPrefix(kv, "RUNNING_PROCESS_IS_DAEMON=")
	})
}

// sessionState finds value's session in ps output: its state and PIDs.
func sessionState(out psOutput, value string) (string, []int) {
	for _, s := range out.Sessions {
		if s.Originator.Value == value {
			var pids []int
			for _, p := range s.Processes {
				pids = append(pids, p.PID)
			}
			return s.State, pids
		}
	}
	return "", nil
}

func TestPsSessions(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	orphanValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	liveValue := fmt.Sprintf("%s:%d", tool, os.Getpid()) // started before its member
	orphan := startTagged(t, orphanValue, procOpts{})
	orphan2 := startTagged(t, orphanValue, procOpts{})
	live := startTagged(t, liveValue, procOpts{})
	daemonValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	daemon := startTagged(t, daemonValue, procOpts{daemon: true})
	foreign := startTagged(t, fmt.Sprintf("CLUD%s:4242", tool), procOpts{})

	res := run(t, runOpts{}, "ps", "--format", "json", "-o", tool, "-o", "CLUD"+tool)
	wantCode(t, res, 0)
	out := decode[psOutput](t, res)
	for _, c := range []struct {
		value, state string
		pids         []int
	}{
		{orphanValue, "orphaned", []int{orphan, orphan2}},
		{liveValue, "alive", []int{live}},
		{daemonValue, "daemon", []int{daemon}},
	} {
		state, pids := sessionState(out, c.value)
		slices.Sort(pids)
		slices.Sort(c.pids)
		if state != c.state || !slices.Equal(pids, c.pids) {
			t.Errorf("session %s: %s %v, want %s %v", c.value, state, pids, c.state, c.pids)
		}
	}
	// Another tool's session, started by some other program, is listed when
	// asked for, and its originator PID does not exist.
	// (A process 4242 that runs now, PIDs having come round, and that
	// started before the member makes it alive, rightly.)
	if state, pids := sessionState(out, "CLUD"+tool+":4242"); pids == nil || pids[0] != foreign || (state != "orphaned" && !exists(4242)) {
		t.Errorf("the foreign session: %s %v, want orphaned [%d]", state, pids, foreign)
	}
	// Typed fields: pid, ppid, tool and pid of the originator, started as
	// RFC 3339, user, argv.
	for _, s := range out.Sessions {
		if s.Originator.Value == orphanValue {
			p := s.Processes[0]
			started, err := time.Parse(time.RFC3339Nano, p.Started)
			if err != nil || time.Since(started) > time.Minute || time.Since(started) < -time.Second {
				t.Errorf("started %q: %v", p.Started, err)
			}
			if s.Originator.Tool != tool || p.User != "root" && os.Geteuid() == 0 || !slices.Equal(p.Argv, []string{"sleep", "300"}) || p.PPID == 0 || s.Count != 2 {
				t.Errorf("session fields: %+v", s)
			}
		}
	}

	// --orphans leaves the live and the daemon session out.
	out = decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json", "--orphans", "-o", tool))
	if len(out.Sessions) != 1 || out.Sessions[0].Originator.Value != orphanValue {
		t.Errorf("--orphans lists %+v", out.Sessions)
	}

	// The table: one summary row per session, one row per process.
	res = run(t, runOpts{}, "ps", "-o", tool)
	wantCode(t, res, 0)
	for _, want := range []string{
		orphanValue + ` +orphaned +2 `, liveValue + ` +alive +1 `, daemonValue + ` +daemon +1 `,
		fmt.Sprintf(`\n%s +orphaned +%d +\d+ `, orphanValue, orphan), fmt.Sprintf(`\n%s +alive +%d `, liveValue, live),
		`sleep 300\n`, `\nORIGINATOR +STATE +PID +PPID +STARTED +USER +CPU +RSS +PORTS +COMMAND\n`,
	} {
		if !regexp.MustCompile(want).MatchString(res.stdout) {
			t.Errorf("the table does not match %q:\n%s", want, res.stdout)
		}
	}
}

func TestPsMalformed(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	forms := []string{tool, tool + ":", ":12" + tool, tool + ":0", tool + ":-1", tool + ":abc", tool + ":4294967296",
		tool + ":2147483648", tool + " x:12", tool + ":12 ", tool + ":+12"}
	pids := map[string]int{}
	for _, v := range forms {
		pids[v] = startTagged(t, v, procOpts{})
	}
	out := decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json"))
	for _, v := range forms {
		state, got := sessionState(out, v)
		if state != "malformed" || len(got) != 1 || got[0] != pids[v] {
			t.Errorf("value %q: %s %v, want malformed [%d]", v, state, got, pids[v])
		}
	}
	// reap never signals them, whatever the filter.
	res := run(t, runOpts{}, "reap", "--format", "json", "--session", tool+":99999999")
	wantCode(t, res, 0)
	for v, pid := range pids {
		if !alive(pid) {
			t.Errorf("the process tagged %q was killed", v)
		}
	}
}

func TestPsBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"ps", "--format", "xml"},
		{"ps", "extra"},
		{"ps", "--bogus"},
		{"reap", "--format", "yaml"},
		{"reap", "--session", "X:abc"},
		{"reap", "--session", "nocolon"},
		{"reap", "--signal", "BOGUS"},
		{"reap", "--grace", "-1"},
		{"reap", "--grace", "soon"},
		{"reap", "--originator", ""},
		{"reap", "now"},
	} {
		res := run(t, runOpts{}, args...)
		lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
		if res.code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || res.stdout != "" {
			t.Errorf("contain %q: status %d, stdout %q, stderr %q; want 2 and one line", args, res.code, res.stdout, res.stderr)
		}
	}
}

func TestPsUnreadableCounted(t *testing.T) {
	t.Parallel()
	requireRoot(t, "root's processes next to an unprivileged ps")
	tool := uniqueTool(t)
	root := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{})
	res := run(t, runOpts{asNobody: true}, "ps", "--format", "json", "-o", tool)
	wantCode(t, res, 0)
	out := decode[psOutput](t, res)
	if len(out.Sessions) != 0 {
		t.Errorf("nobody sees root's session: %+v", out.Sessions)
	}
	if !regexp.MustCompile(`contain: skipped \d+ processes whose environment cannot be read \(([^()\n]+, )?\d+: permission denied; other users' processes need root\)`).MatchString(res.stderr) || out.Unreadable["permission denied"] == 0 {
		t.Errorf("the unreadable processes are not counted; stderr %q, unreadable %v", res.stderr, out.Unreadable)
	}
	if !alive(root) {
		t.Error("root's process died")
	}
}

// TestPsUsage: a tagged process that wrote 64 MiB and spun for 0.3 s of
// CPU shows them in JSON, as the kernel counts them (the resident size as
// /proc/PID/statm says it, a file ps does not read, to within a few pages);
// its session's totals are the sums of its two processes, and its count of
// live processes two; the table shows both, per process and per session.
func TestPsUsage(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "perl", "perl-base")
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	dir := t.TempDir()
	began := time.Now()
	hogPID := startTagged(t, value, procOpts{}, "perl", "-e",
		`my $s = "x" x (64 << 20); 1 while (times)[0] < 0.3; open(my $f, ">", "$ARGV[0]/ready") or die; close $f; sleep 300`, dir)
	sleeper := startTagged(t, value, procOpts{})
	waitFor(t, "the hog to spin", time.Minute, func() bool {
		_, err := os.Stat(dir + "/ready")
		return err == nil
	})
	lived := time.Since(began)
	before := statmRSS(t, hogPID)
	res := run(t, runOpts{}, "ps", "--format", "json", "-o", tool)
	wantCode(t, res, 0)
	after := statmRSS(t, hogPID)
	out := decode[psOutput](t, res)
	if len(out.Sessions) != 1 || len(out.Sessions[0].Processes) != 2 {
		t.Fatalf("want one session of two processes: %s", res.stdout)
	}
	s := out.Sessions[0]
	var cpu float64
	var rss uint64
	for _, p := range s.Processes {
		if p.CPU == nil || p.RSS == nil || p.Absent != "" {
			t.Fatalf("process %d: no usage (%s)", p.PID, p.Absent)
		}
		cpu += *p.CPU
		rss += *p.RSS
		switch p.PID {
		case hogPID:
			if *p.RSS < 64<<20 || *p.CPU < 0.3 || *p.CPU > lived.Seconds()*float64(runtime.NumCPU()) {
				t.Errorf("the hog: %v s of CPU and %d bytes resident; want 0.3 s to %v, and 64 MiB or more", *p.CPU, *p.RSS, lived)
			}
			// The kernel counts resident pages per CPU, and stat
			// sums them approximately, statm exactly: a few pages apart.
			if d := int64(*p.RSS) - int64(before); before == after && (d > 1<<20 || d < -1<<20) {
				t.Errorf("the hog's resident size: %d bytes, /proc/%d/statm %d", *p.RSS, hogPID, before)
			}
		case sleeper:
			if *p.RSS == 0 || *p.RSS > 64<<20 || *p.CPU > 0.3 {
				t.Errorf("the sleeper: %v s of CPU and %d bytes resident", *p.CPU, *p.RSS)
			}
		default:
			t.Errorf("process %d is neither the hog %d nor the sleeper %d", p.PID, hogPID, sleeper)
		}
	}
	tot := s.Totals
	if tot.Processes != 2 || s.Count != 2 || tot.Unknown != 0 || tot.RSS != rss || math.Abs(tot.CPU-cpu) > 1e-9 {
		t.Errorf("totals %+v (count %d); want 2 processes, %v s and %d bytes", tot, s.Count, cpu, rss)
	}

	res = run(t, runOpts{}, "ps", "-o", tool)
	wantCode(t, res, 0)
	mib := `(6[4-9]|[7-9]\d|\d{3,})\.\dM` // 64 MiB or more
	for _, want := range []string{
		`^SESSION +STATE +PROCESSES +CPU +RSS +WHY\n`,
		fmt.Sprintf(`\n%s +orphaned +2 +0:\d\d\.\d\d +%s +PID \d+ is gone\n`, value, mib),
		`\nORIGINATOR +STATE +PID +PPID +STARTED +USER +CPU +RSS +PORTS +COMMAND\n`,
		fmt.Sprintf(`\n%s +orphaned +%d +\d+ +[-\d]+ [:\d]+ +\S+ +0:\d\d\.\d\d +%s +- +perl -e `, value, hogPID, mib),
		fmt.Sprintf(`\n%s +orphaned +%d +\d+ +[-\d]+ [:\d]+ +\S+ +0:00\.\d\d +\d+\.\d[KM] +- +sleep 300\n`, value, sleeper),
	} {
		if !regexp.MustCompile(want).MatchString(res.stdout) {
			t.Errorf("the table does not match %q:\n%s", want, res.stdout)
		}
	}
}

// statmRSS reads a process's resident size from /proc/PID/statm.
func statmRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * uint64(os.Getpagesize())
}
