//go:build windows

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/report"
)

// TestWinExitStatus: COMMAND's own code passes through, all 32 bits of it.
func TestWinExitStatus(t *testing.T) {
	needContain(t)
	o := asHelper("exit", tmpDir(t))
	for _, code := range []uint32{0, 3, 255, 256, 0xC0000005} {
		res := run(t, o, "run", "--", self(t), strconv.FormatUint(uint64(code), 10))
		wantCode(t, res, int(code))
	}
}

// TestWinStartFailures: not found 127, not executable 126, bad options 125.
func TestWinStartFailures(t *testing.T) {
	needContain(t)
	notExe := filepath.Join(tmpDir(t), "data.exe")
	os.WriteFile(notExe, []byte("not a program"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--", "no-such-command-here"}, 127, "cannot run no-such-command-here"},
		{[]string{"run", "--", notExe}, 126, "cannot run"},
		{[]string{"run", "-s", "HUP", "--", "cmd", "/c", "exit", "0"}, 125, `invalid signal "HUP": Windows can deliver`},
		{[]string{"run", "-s", "USR1", "--", "cmd", "/c", "exit", "0"}, 125, "Windows can deliver"},
		{[]string{"run", "-t", "-1", "--", "cmd", "/c", "exit", "0"}, 125, "--timeout"},
		{[]string{"run", "--no-such-option", "--", "cmd"}, 125, "no-such-option"},
	} {
		res := run(t, runOpts{}, c.args...)
		wantCode(t, res, c.code)
		if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || !strings.Contains(lines[0], c.msg) {
			t.Errorf("%q: stderr %q, want one line with %q", c.args, res.stderr, c.msg)
		}
	}
}

// TestWinTag: COMMAND sees CONTAIN:<contain's PID>; an inherited value is
// replaced whatever the case of its name; -o names the tool.
func TestWinTag(t *testing.T) {
	needContain(t)
	o := asHelper("env", tmpDir(t), "running_process_originator=OLD:1", "Running_Process_Is_Daemon=1")
	res := run(t, o, "run", "--", self(t))
	wantCode(t, res, 0)
	if want := fmt.Sprintf("CONTAIN:%d|\n", res.pid); res.stdout != want {
		t.Fatalf("COMMAND saw %q, want %q", res.stdout, want)
	}
	res = run(t, o, "run", "-o", "WIN.TEST_1", "--", self(t))
	if want := fmt.Sprintf("WIN.TEST_1:%d|\n", res.pid); res.stdout != want {
		t.Fatalf("with -o: COMMAND saw %q, want %q", res.stdout, want)
	}
}

// runTree runs the tree helper under contain with args, and returns the
// records of COMMAND, its `start /b` child and its detached grandchild.
func runTree(t *testing.T, dir string, args ...string) (wait func() result, command, startb, detached recorded) {
	t.Helper()
	_, wait = startContain(t, asHelper("tree", dir), args...)
	startb, detached, command = readRecord(t, dir, "startb"), readRecord(t, dir, "detached"), readRecord(t, dir, "command")
	return wait, command, startb, detached
}

// wantAllGone fails unless every recorded process has ended, within d.
func wantAllGone(t *testing.T, d time.Duration, procs map[string]recorded) {
	t.Helper()
	for name, r := range procs {
		if !r.goneWithin(d) {
			t.Errorf("%s (PID %d) is still running", name, r.pid)
		}
	}
}

// TestWinTreeGoneAfterExit: when COMMAND exits, its `start /b` child and
// its detached grandchild, both tagged, are gone by the time contain
// returns, and contain returns COMMAND's status.
func TestWinTreeGoneAfterExit(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	wait, command, startb, detached := runTree(t, dir, "run", "-v", "-g", "1s", "--", self(t), "exit")
	for name, r := range map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached} {
		if !strings.HasPrefix(r.tag, "CONTAIN:") {
			t.Errorf("%s carries %q", name, r.tag)
		}
	}
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	res := wait()
	wantCode(t, res, 7)
	if want := fmt.Sprintf("CONTAIN:%d", res.pid); detached.tag != want {
		t.Errorf("the detached grandchild carries %q, want %q", detached.tag, want)
	}
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
}

// TestWinTreeGoneAfterTimeout: on timeout the whole tree goes, status 124.
// (The timeout leaves the tree, three Wine process starts, time to start on
// a loaded machine.)
func TestWinTreeGoneAfterTimeout(t *testing.T) {
	needContain(t)
	wait, command, startb, detached := runTree(t, tmpDir(t), "run", "-v", "-t", "5", "-g", "1s", "--", self(t), "stay")
	res := wait()
	wantCode(t, res, 124)
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
	if underWine() && !strings.Contains(res.stderr, "cannot send CTRL_BREAK_EVENT to the command's process group") {
		t.Errorf("under Wine CTRL_BREAK_EVENT fails, and contain should say it terminated the job instead:\n%s", res.stderr)
	}
}

// TestWinTimeoutFallback: when the timeout event cannot be delivered and
// the job is terminated instead, COMMAND counts as ended by the timeout
// signal: --preserve-status gives 128+15, as on Linux, not the exit code 1
// that terminating gives it.
func TestWinTimeoutFallback(t *testing.T) {
	needContain(t)
	if !underWine() {
		t.Skip("CTRL_BREAK_EVENT is delivered on Windows (TestWinTimeoutBreak); only Wine 8 makes contain fall back")
	}
	res := run(t, asHelper("ignore", tmpDir(t)), "run", "-t", "3", "--preserve-status", "--", self(t), "x")
	wantCode(t, res, 128+15)
}

// TestWinTreeGoneAfterTerminateProcess: contain ended hard (TerminateProcess,
// what taskkill /F does): the kernel closes the job, nothing survives.
func TestWinTreeGoneAfterTerminateProcess(t *testing.T) {
	needContain(t)
	wait, command, startb, detached := runTree(t, tmpDir(t), "run", "--", self(t), "stay")
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(startContainPID(t, command)))
	if err != nil {
		t.Fatal(err)
	}
	windows.TerminateProcess(h, 1)
	windows.CloseHandle(h)
	wait()
	wantAllGone(t, 10*time.Second, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
}

// startContainPID is the PID in a recorded tag: the contain that runs it.
func startContainPID(t *testing.T, r recorded) int {
	t.Helper()
	_, p, _ := strings.Cut(r.tag, ":")
	pid, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("bad tag %q", r.tag)
	}
	return pid
}

// TestWinSignalKill: -s KILL terminates the job on timeout: status 137.
func TestWinSignalKill(t *testing.T) {
	needContain(t)
	wait, command, startb, detached := runTree(t, tmpDir(t), "run", "-s", "KILL", "-t", "5", "--", self(t), "stay")
	res := wait()
	wantCode(t, res, 137)
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
}

// TestWinTimeoutCtrlC: -s INT sends CTRL_C_EVENT to COMMAND's process
// group: a COMMAND that handles it ends, status 124, or its own status with
// --preserve-status. One that ignores it is terminated after --kill-after:
// 137.
func TestWinTimeoutCtrlC(t *testing.T) {
	needContain(t)
	if !hasConsole() {
		t.Skip("no console: console control events need one (TestWindowsUnderWine gives one through script(1))")
	}
	dir := tmpDir(t)
	// (Timeouts of 3 s: the helper must have set up its handler first.)
	res := run(t, asHelper("ctrlc", dir), "run", "-v", "-s", "INT", "-t", "3", "--", self(t), "x")
	wantCode(t, res, 124)
	if !strings.Contains(res.stderr, "sent CTRL_C_EVENT to the command's process group") {
		t.Fatalf("contain did not send CTRL_C_EVENT:\n%s", res.stderr)
	}
	res = run(t, asHelper("ctrlc", dir), "run", "-s", "INT", "-t", "3", "--preserve-status", "--", self(t), "x")
	wantCode(t, res, 42)
	start := time.Now()
	res = run(t, asHelper("ignore", dir), "run", "-v", "-s", "INT", "-t", "3", "-k", "1", "--", self(t), "x")
	wantCode(t, res, 137)
	if d := time.Since(start); d < 4*time.Second {
		t.Errorf("killed after %v, before the timeout and --kill-after had passed", d)
	}
}

// TestWinTimeoutBreak: TERM is CTRL_BREAK_EVENT to COMMAND's group.
func TestWinTimeoutBreak(t *testing.T) {
	needContain(t)
	if underWine() {
		t.Skip("Wine 8 does not implement CTRL_BREAK_EVENT (GenerateConsoleCtrlEvent fails with error 6); the fallback, terminating the job, is TestWinTreeGoneAfterTimeout")
	}
	if !hasConsole() {
		t.Skip("no console: console control events need one")
	}
	res := run(t, asHelper("ctrlc", tmpDir(t)), "run", "-t", "3", "--preserve-status", "--", self(t), "x")
	wantCode(t, res, 42)
}

// TestWinTypedCtrlC: a Ctrl-C at the console reaches COMMAND as it would
// without contain (COMMAND ends with its own status), and contain is not
// ended by it before it has closed the job.
func TestWinTypedCtrlC(t *testing.T) {
	needContain(t)
	if !hasConsole() {
		t.Skip("no console to type Ctrl-C at (TestWindowsUnderWine gives one through script(1))")
	}
	dir := tmpDir(t)
	_, wait := startContain(t, asHelper("ctrlc", dir), "run", "-v", "--", self(t), "x")
	readRecord(t, dir, "ctrlc")
	// What a Ctrl-C typed at the console does: CTRL_C_EVENT to every
	// process attached to it, this test included.
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	defer signal.Stop(c)
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_C_EVENT, 0); err != nil {
		t.Fatal(err)
	}
	res := wait()
	if res.code != 42 {
		t.Fatalf("exit status %d, want COMMAND's 42 (stdout %q, stderr %q)", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "received CTRL_C_EVENT") {
		t.Errorf("contain did not see the Ctrl-C: %q", res.stderr)
	}
}

// TestWinNested: contain run -- contain run -- tree; the inner COMMAND is
// tagged by the inner contain, and killing the outer contain hard ends
// everything, the inner contain's job included.
func TestWinNested(t *testing.T) {
	needContain(t)
	wait, command, startb, detached := runTree(t, tmpDir(t), "run", "--", bin, "run", "-o", "INNER", "--", self(t), "stay")
	if !strings.HasPrefix(command.tag, "INNER:") {
		t.Fatalf("the inner COMMAND carries %q", command.tag)
	}
	inner := startContainPID(t, command)
	innerH, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(inner))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(innerH)
	outer := parentOf(t, inner)
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(outer))
	if err != nil {
		t.Fatal(err)
	}
	windows.TerminateProcess(h, 1)
	windows.CloseHandle(h)
	wait()
	procs := map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached,
		"inner contain": {pid: inner, h: innerH}}
	wantAllGone(t, 10*time.Second, procs)
}

// parentOf finds pid's parent in a process snapshot.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(snap)
	pe := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &pe); err == nil; err = windows.Process32Next(snap, &pe) {
		if int(pe.ProcessID) == pid {
			return int(pe.ParentProcessID)
		}
	}
	t.Fatalf("PID %d is not in the snapshot", pid)
	return 0
}

// TestWinInsideForeignJob: contain started inside someone else's
// kill-on-close job (as CI runners start jobs) still contains its command.
func TestWinInsideForeignJob(t *testing.T) {
	needContain(t)
	j, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(j)
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(j, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		t.Fatal(err)
	}
	dir := tmpDir(t)
	cmd, wait := startContain(t, asHelper("tree", dir), "run", "--", self(t), "exit")
	cmd.Process.WithHandle(func(h uintptr) { err = windows.AssignProcessToJobObject(j, windows.Handle(h)) })
	if err != nil {
		t.Fatalf("cannot put contain into a job: %v", err)
	}
	startb, detached := readRecord(t, dir, "startb"), readRecord(t, dir, "detached")
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	if res := wait(); res.code != 7 {
		t.Fatalf("contain inside a job: exit status %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	wantAllGone(t, 0, map[string]recorded{"start /b child": startb, "detached grandchild": detached})
}

// TestWinDetach: --detach starts COMMAND outside the job, tagged and marked
// as a daemon, prints its PID and returns 0; it outlives contain.
func TestWinDetach(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	res := run(t, asHelper("sleep", dir), "run", "-d", "--", self(t), "daemon")
	wantCode(t, res, 0)
	d := readRecord(t, dir, "daemon")
	if got := strings.TrimSpace(res.stdout); got != strconv.Itoa(d.pid) {
		t.Errorf("contain printed %q, the daemon is PID %d", got, d.pid)
	}
	if d.tag != fmt.Sprintf("CONTAIN:%d", res.pid) || d.daemon != "1" {
		t.Errorf("the daemon carries %q, daemon mark %q", d.tag, d.daemon)
	}
	if d.goneWithin(500 * time.Millisecond) {
		t.Fatal("the detached command did not outlive contain")
	}
}

// TestWinReport: --report under Windows: how COMMAND ended, the job as the
// containment, the `start /b` child and the detached grandchild as
// leftovers found in the job and ended by contain, and each resource
// given from the job's accounting or absent with the reason.
func TestWinReport(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	wait, _, startb, detached := runTree(t, dir, "run", "-g", "1s", "--report", path, "--", self(t), "exit")
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	res := wait()
	wantCode(t, res, 7)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if r.Version != report.Version || r.WrittenBy != "contain" || r.ContainPID != res.pid || r.Ending.ExitCode == nil || *r.Ending.ExitCode != 7 {
		t.Errorf("report: %s", b)
	}
	if len(r.Containment) == 0 || !strings.HasPrefix(r.Containment[0], "job object") {
		t.Errorf("containment %v", r.Containment)
	}
	found := map[int]report.Leftover{}
	for _, l := range r.Leftovers {
		found[l.PID] = l
	}
	for name, rec := range map[string]recorded{"start /b child": startb, "detached grandchild": detached} {
		l, ok := found[rec.pid]
		if !ok {
			t.Errorf("%s %d is not among the leftovers: %s", name, rec.pid, b)
			continue
		}
		if l.FoundBy != "job" || l.EndedBy == "" || l.EndedBy == "still running" || l.EndedAfterSeconds == nil || len(l.Argv) == 0 {
			t.Errorf("%s: %+v", name, l)
		}
	}
	// The close's Ctrl-Break reached the start /b child (COMMAND's console
	// process group): ended by contain, with the event and how it ended.
	var ended *report.Ended
	for i, e := range r.EndedByContain {
		if e.PID == startb.pid {
			ended = &r.EndedByContain[i]
		}
	}
	if ended == nil || ended.Phase != report.PhaseClose || (ended.Signal != "CTRL_BREAK_EVENT" && ended.Signal != "TerminateJobObject") ||
		ended.EndedBy == "" || ended.EndedBy == "still running" || ended.Command {
		t.Errorf("start /b child %d among ended_by_contain: %+v\n%s", startb.pid, ended, b)
	}
	rs := r.Resources
	if (rs.CPUUserSeconds == nil) == (rs.Absent["cpu_user_seconds"] == "") {
		t.Errorf("CPU neither given nor absent with a reason: %s", b)
	}
	if (rs.PeakMemoryBytes == nil) == (rs.Absent["peak_memory_bytes"] == "") {
		t.Errorf("peak memory neither given nor absent with a reason: %s", b)
	}
	t.Logf("report:\n%s", b)
}
