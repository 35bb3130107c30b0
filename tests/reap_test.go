//go:build linux

package tests

import (
	"errors"
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
)

// results maps PID to the result reap reported for it.
func results(out reapOutput) map[int]string {
	m := map[int]string{}
	for _, p := range out.Processes {
		m[p.PID] = p.Result
	}
	return m
}

// procState reads the state letter of pid ('S', 'T', 'Z', ...), or 0.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// deadRunCgroup makes, under own, the cgroup contain-PID of a contain run
// that is gone: PID is one no process has, and where a test run killed
// before its clean-up left that group, the next one. Removed at the end.
func deadRunCgroup(t *testing.T, own string) string {
	t.Helper()
	dead := filepath.Join(own, fmt.Sprintf("contain-%d", deadPID(t)))
	err := os.Mkdir(dead, 0o755)
	for i := 0; i < 10 && errors.Is(err, fs.ErrExist); i++ {
		dead = filepath.Join(own, fmt.Sprintf("contain-%d", deadPID(t)))
		err = os.Mkdir(dead, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dead) })
	return dead
}

func TestReapOrphansOnly(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	orphanValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	orphan := startTagged(t, orphanValue, procOpts{})
	// A TERM-ignoring member: it takes SIGKILL after the grace period.
	stubborn := startTagged(t, orphanValue, procOpts{}, "sh", "-c", `trap "" TERM; while :; do sleep 0.05; done`)
	// Its tag shows before the shell has run its trap: a reap then ended
	// it with the first signal (once in some fifteen runs of the suite).
	waitFor(t, "the shell to ignore SIGTERM", 10*time.Second, func() bool { return sigIgn(t, stubborn)&(1<<(syscall.SIGTERM-1)) != 0 })
	live := startTagged(t, fmt.Sprintf("%s:%d", tool, os.Getpid()), procOpts{})
	daemonValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	daemon := startTagged(t, daemonValue, procOpts{daemon: true})

	start := time.Now()
	res := run(t, runOpts{}, "reap", "--format", "json", "-o", tool, "-g", "300ms")
	wantCode(t, res, 0)
	out := decode[reapOutput](t, res)
	got := results(out)
	if got[orphan] != "ended after the first signal" || got[stubborn] != "killed with SIGKILL" {
		t.Errorf("results: %v\nstdout: %s", got, res.stdout)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("SIGKILL came after %v, before the grace period", d)
	}
	waitFor(t, "the orphans to die", time.Second, func() bool { return !alive(orphan) && !alive(stubborn) })
	if !alive(live) || !alive(daemon) {
		t.Errorf("reap killed a live session (%v) or a daemon (%v)", !alive(live), !alive(daemon))
	}
	if _, listed := got[live]; listed {
		t.Errorf("the live session's process is in the report: %s", got[live])
	}
	if len(out.SkippedSessions) != 2 {
		t.Errorf("skipped sessions: %+v, want the live and the daemon one", out.SkippedSessions)
	}

	// The daemon goes only when asked.
	res = run(t, runOpts{}, "reap", "--include-daemons", "--session", daemonValue)
	wantCode(t, res, 0)
	waitFor(t, "the daemon to die", time.Second, func() bool { return !alive(daemon) })
	if !strings.Contains(res.stdout, daemonValue) || !strings.Contains(res.stdout, "ended after the first signal") {
		t.Errorf("the table does not report the daemon:\n%s", res.stdout)
	}
	if !alive(live) {
		t.Error("the live session died")
	}

	// Nothing left to do: status 0, and it says so.
	res = run(t, runOpts{}, "reap", "-o", tool+"none")
	wantCode(t, res, 0)
	if !strings.Contains(res.stdout, "nothing to reap") {
		t.Errorf("stdout %q", res.stdout)
	}
}

func TestReapDryRun(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	pid := startTagged(t, value, procOpts{})
	res := run(t, runOpts{}, "reap", "-n", "-o", tool, "-s", "INT", "-g", "5s")
	wantCode(t, res, 0)
	if want := fmt.Sprintf("%s  %d  ", value, pid); !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "would send SIGINT, then SIGKILL after 5s") {
		t.Errorf("dry run output:\n%s", res.stdout)
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(pid) || procState(pid) == 'T' {
		t.Fatalf("the dry run touched %d (state %c)", pid, procState(pid))
	}
	out := decode[reapOutput](t, run(t, runOpts{}, "reap", "--dry-run", "--format", "json", "-o", tool))
	if !out.DryRun || len(out.Processes) != 1 || out.Processes[0].PID != pid {
		t.Errorf("JSON dry run: %+v", out)
	}
}

// TestReapRecycledPID places a new process at the PID a session names: the
// session is orphaned, its member is reaped, and the newer process at that
// PID is never signalled.
func TestReapRecycledPID(t *testing.T) {
	t.Parallel()
	requireRoot(t, "writing /proc/sys/kernel/ns_last_pid")
	tool := uniqueTool(t)
	var member, impostor, target int
	for attempt := 0; attempt < 20 && impostor == 0; attempt++ {
		target = (exitedPID(t)+300+attempt*50)%(deadPID(t)-1000) + 300 // below pid_max
		if exists(target) {
			continue
		}
		value := fmt.Sprintf("%s:%d", tool, target)
		member = startTagged(t, value, procOpts{})
		time.Sleep(20 * time.Millisecond) // a later start, in clock ticks
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(target-1)), 0); err != nil {
			t.Fatalf("ns_last_pid: %v", err)
		}
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		killOnCleanup(t, cmd.Process.Pid)
		if cmd.Process.Pid == target {
			impostor = target
		} else {
			cmd.Process.Kill()
			syscall.Kill(member, syscall.SIGKILL)
		}
	}
	if impostor == 0 {
		t.Fatal("could not place a process at a chosen PID in 20 attempts")
	}
	value := fmt.Sprintf("%s:%d", tool, target)
	out := decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json", "-o", tool))
	if state, pids := sessionState(out, value); state != "orphaned" || len(pids) != 1 || pids[0] != member {
		t.Fatalf("session %s: %s %v, want orphaned [%d]; %+v", value, state, pids, member, out)
	} else if reason := out.Sessions[0].Reason; !strings.Contains(reason, "reused") {
		t.Errorf("reason %q does not say the PID was reused", reason)
	}
	res := run(t, runOpts{}, "reap", "-o", tool, "-g", "1s")
	wantCode(t, res, 0)
	waitFor(t, "the member to die", time.Second, func() bool { return !alive(member) })
	time.Sleep(100 * time.Millisecond)
	if !alive(impostor) || procState(impostor) != 'S' {
		t.Fatalf("the process now at PID %d was signalled (state %c)\n%s", impostor, procState(impostor), res.stdout)
	}
}

// TestReapForkingSession reaps a session that keeps forking while it is
// reaped: nothing of it is left.
func TestReapForkingSession(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	for i := 0; i < 3; i++ {
		startTagged(t, value, procOpts{}, "sh", "-c", `while :; do sleep 300 & sleep 0.002; done`)
	}
	waitFor(t, "the session to grow", 10*time.Second, func() bool { return len(tagged(value)) > 30 })
	res := run(t, runOpts{}, "reap", "-o", tool, "-g", "1s")
	wantCode(t, res, 0)
	time.Sleep(200 * time.Millisecond)
	if left := tagged(value); len(left) > 0 {
		t.Fatalf("%d processes of the forking session are left: %v\n%s", len(left), left, res.stdout)
	}
}

// TestReapUnprivileged: nobody reaps its own orphans and cannot even see
// root's; root's stay.
func TestReapUnprivileged(t *testing.T) {
	t.Parallel()
	requireRoot(t, "processes of two users")
	tool := uniqueTool(t)
	rootValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	nobodyValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	rootPID := startTagged(t, rootValue, procOpts{})
	nobodyPID := startTagged(t, nobodyValue, procOpts{nobody: true})
	// -v: the count of what nobody could not read is said (without it,
	// only where nothing matched: TestUnreadableSaidWhereItMatters).
	res := run(t, runOpts{asNobody: true}, "reap", "-v", "-o", tool)
	wantCode(t, res, 0)
	waitFor(t, "nobody's orphan to die", time.Second, func() bool { return !alive(nobodyPID) })
	if !alive(rootPID) {
		t.Fatal("nobody's reap killed root's process")
	}
	if strings.Contains(res.stdout, rootValue) || !strings.Contains(res.stderr, "permission denied") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
	// Root reaps both users'.
	res = run(t, runOpts{}, "reap", "-o", tool)
	wantCode(t, res, 0)
	waitFor(t, "root's orphan to die", time.Second, func() bool { return !alive(rootPID) })
}

// TestReapLeftoverCgroup: the cgroup of a contain run that died is killed
// and removed, with the process inside that dropped its tag; a group whose
// contain runs is not touched.
func TestReapLeftoverCgroup(t *testing.T) {
	t.Parallel()
	requireRoot(t, "making cgroups")
	own := ownCgroupDir()
	if own == "" {
		t.Fatal("no cgroup2 mount")
	}
	dead := deadRunCgroup(t, own)
	cmd := exec.Command("sleep", "300")
	cmd.Env = withoutTag(os.Environ())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	killOnCleanup(t, cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(dead, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	// A group named after this test process, which runs and is older than
	// anything inside: a live contain's.
	liveDir := filepath.Join(own, fmt.Sprintf("contain-%d", os.Getpid()))
	if err := os.Mkdir(liveDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(liveDir) })
	// Inside it, the group of a nested contain that died (killed -9 while
	// the outer one runs), with a tagged process.
	nested := filepath.Join(liveDir, fmt.Sprintf("contain-%d", deadPID(t)))
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(nested) })

	// A tagged process in the group too, so that the reap can be narrowed
	// to this test's session (an unfiltered reap would take every orphaned
	// session of the machine).
	tool := uniqueTool(t)
	member := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{})
	if err := os.WriteFile(filepath.Join(dead, "cgroup.procs"), []byte(strconv.Itoa(member)), 0); err != nil {
		t.Fatal(err)
	}
	inner := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{})
	if err := os.WriteFile(filepath.Join(nested, "cgroup.procs"), []byte(strconv.Itoa(inner)), 0); err != nil {
		t.Fatal(err)
	}
	res := run(t, runOpts{}, "reap", "--format", "json", "-o", tool)
	wantCode(t, res, 0)
	out := decode[reapOutput](t, res)
	waitFor(t, "the processes in the leftover cgroup to die", time.Second, func() bool { return !alive(cmd.Process.Pid) && !alive(member) })
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the leftover cgroup is still there: %v\n%s", err, res.stdout)
	}
	waitFor(t, "the nested group's process to die", time.Second, func() bool { return !alive(inner) })
	if _, err := os.Stat(nested); !os.IsNotExist(err) {
		t.Errorf("the dead nested group is still there: %v\n%s", err, res.stdout)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live contain's cgroup was removed")
	}
	if got := results(out)[cmd.Process.Pid]; got == "" {
		t.Errorf("the report does not list the process in the cgroup: %+v", out)
	}
	found := false
	for _, c := range out.Cgroups {
		found = found || c.Dir == dead && c.Result == "killed and removed"
		if c.Dir == liveDir {
			t.Errorf("the live group is in the report: %+v", c)
		}
	}
	if !found {
		t.Errorf("cgroups in the report: %+v", out.Cgroups)
	}
}

// TestReapSparesItsAncestors: a session whose processes include the
// reaper's own ancestors (contain reap run from inside an orphaned session)
// leaves them alone.
func TestReapSparesItsAncestors(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	dir := t.TempDir()
	// sh (tagged, orphaned session) runs contain reap and records its status.
	script := fmt.Sprintf(`%s reap -o %s --format json > %s/out; echo $? > %s/code; exec sleep 300`, bin, tool, dir, dir)
	sh := startTagged(t, value, procOpts{}, "sh", "-c", script)
	waitFor(t, "reap to run", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "code"))
		return len(b) > 0
	})
	if !alive(sh) {
		t.Fatal("reap killed its own parent")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	if !regexp.MustCompile(`"result":\s*"left alone: an ancestor of this contain"`).Match(b) {
		t.Errorf("report:\n%s", b)
	}
}

// TestReapColumnsOneMeaning: a dry run and a real one show the same
// columns, each with one meaning: SESSION the tag a process carries (-
// for none), CGROUP the leftover cgroup it is in. A tagged process in a
// leftover cgroup shows its tag in both (the real run used to show
// "cgroup DIR" in SESSION), an untagged one - and the cgroup; the dry
// run's JSON has them as originator and cgroup.
func TestReapColumnsOneMeaning(t *testing.T) {
	t.Parallel()
	requireRoot(t, "making cgroups")
	own := ownCgroupDir()
	if own == "" {
		t.Fatal("no cgroup2 mount")
	}
	dead := deadRunCgroup(t, own)
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	member := startTagged(t, value, procOpts{})
	untagged := startAs(t, false, withoutTag(os.Environ()), "sleep", "300")
	for _, pid := range []int{member, untagged} {
		if err := os.WriteFile(filepath.Join(dead, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	// rows maps each PID of reap's table to its cells, by column name.
	rows := func(res result) (string, map[int]map[string]string) {
		lines := strings.Split(res.stdout, "\n")
		split := regexp.MustCompile(`  +`)
		head := split.Split(lines[0], -1)
		m := map[int]map[string]string{}
		for _, l := range lines[1:] {
			cells := split.Split(l, -1)
			if l == "" {
				break
			}
			row := map[string]string{}
			for i, h := range head {
				if i < len(cells) {
					row[h] = cells[i]
				}
			}
			pid, _ := strconv.Atoi(row["PID"])
			m[pid] = row
		}
		return lines[0], m
	}
	dry := run(t, runOpts{}, "reap", "-n", "-o", tool)
	wantCode(t, dry, 0)
	dryHead, dryRows := rows(dry)
	out := decode[struct {
		Processes []struct {
			PID        int `json:"pid"`
			Originator struct {
				Value string `json:"value"`
			} `json:"originator"`
			Cgroup string `json:"cgroup"`
		} `json:"processes"`
	}](t, run(t, runOpts{}, "reap", "-n", "--format", "json", "-o", tool))
	if len(out.Processes) != 1 || out.Processes[0].PID != member || out.Processes[0].Originator.Value != value || out.Processes[0].Cgroup != dead {
		t.Errorf("the dry run's JSON: %+v", out.Processes)
	}
	res := run(t, runOpts{}, "reap", "-g", "0.5", "-o", tool)
	wantCode(t, res, 0)
	head, got := rows(res)
	const columns = "SESSION PID USER CGROUP COMMAND RESULT"
	if strings.Join(strings.Fields(dryHead), " ") != columns || strings.Join(strings.Fields(head), " ") != columns {
		t.Errorf("the columns differ, or lack CGROUP:\n-n: %s\nreap: %s", dryHead, head)
	}
	for name, r := range map[string]map[string]string{"-n": dryRows[member], "reap": got[member]} {
		if r["SESSION"] != value || r["CGROUP"] != dead {
			t.Errorf("%s: the tagged member's row: %v; want SESSION %s, CGROUP %s\n%s%s", name, r, value, dead, dry.stdout, res.stdout)
		}
	}
	if r := got[untagged]; r["SESSION"] != "-" || r["CGROUP"] != dead {
		t.Errorf("reap: the untagged process's row: %v; want SESSION -, CGROUP %s\n%s", r, dead, res.stdout)
	}
	waitFor(t, "the cgroup's processes to die", 2*time.Second, func() bool { return !alive(member) && !alive(untagged) })
}
