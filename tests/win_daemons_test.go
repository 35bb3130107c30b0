//go:build windows

package tests

// --allow-daemons, --on-timeout and contain stop's event, on Windows: the
// helpers they need are played by this test binary too (detacher,
// breaker, hook).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

func init() {
	for _, h := range []string{"detacher", "breaker", "hook"} {
		helpers[h] = func(args []string) int { return daemonHelper(h, args) }
	}
}

// daemonHelper plays helper h and returns its exit status.
func daemonHelper(h string, args []string) int {
	dir := os.Getenv("CONTAIN_HELPER_DIR")
	self, _ := os.Executable()
	switch h {
	case "detacher": // COMMAND: contain run -v -d -- (the sleep helper, as
		// "daemon"); wait until the daemon has recorded itself and
		// dir/exit exists, then exit
		c := exec.Command(os.Getenv("CONTAIN_EXE"), "run", "-v", "-d", "--", self, "daemon")
		c.Env = append(os.Environ(), helperVar+"=sleep")
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "contain run -d:", err)
			return 1
		}
		waitFile(filepath.Join(dir, "daemon"))
		record(dir, "detacher")
		waitFile(filepath.Join(dir, "exit"))
		return 0
	case "breaker": // COMMAND: start the sleep helper, unmarked, as
		// "escapee" with CREATE_BREAKAWAY_FROM_JOB; write to dir/broke
		// whether it left the job, then, a second later, whether it is
		// in a job again; wait for dir/exit
		c := exec.Command(self, "escapee")
		c.Env = append(os.Environ(), helperVar+"=sleep")
		c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB}
		if err := c.Start(); err != nil {
			os.WriteFile(filepath.Join(dir, "broke"), []byte("refused: "+err.Error()), 0o644)
			return 0
		}
		var h windows.Handle
		c.Process.WithHandle(func(ph uintptr) {
			self := windows.CurrentProcess()
			windows.DuplicateHandle(self, windows.Handle(ph), self, &h, 0, false, windows.DUPLICATE_SAME_ACCESS)
		})
		first := inAnyJob(h)
		time.Sleep(2 * time.Second)
		os.WriteFile(filepath.Join(dir, "broke"), []byte(fmt.Sprintf("in a job at first %v, then %v", first, inAnyJob(h))), 0o644)
		waitFile(filepath.Join(dir, "exit"))
		return 0
	case "hook": // the --on-timeout command: record whether COMMAND
		// ($CONTAIN_COMMAND_PID) still runs, with the three variables,
		// then exit with args[0], or sleep for args[1] seconds first
		pid, _ := strconv.Atoi(os.Getenv("CONTAIN_COMMAND_PID"))
		state := "gone"
		if ph, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid)); err == nil {
			if ev, _ := windows.WaitForSingleObject(ph, 0); ev == uint32(windows.WAIT_TIMEOUT) {
				state = "running"
			}
			windows.CloseHandle(ph)
		}
		line := fmt.Sprintf("%d %s %s %s %s", os.Getpid(), state, os.Getenv("CONTAIN_COMMAND_PID"), os.Getenv("CONTAIN_SESSION"), os.Getenv("CONTAIN_PID"))
		tmp := filepath.Join(dir, "hook.tmp")
		os.WriteFile(tmp, []byte(line), 0o644)
		os.Rename(tmp, filepath.Join(dir, "hook"))
		if len(args) > 1 {
			s, _ := strconv.Atoi(args[1])
			time.Sleep(time.Duration(s) * time.Second)
		}
		n, _ := strconv.Atoi(args[0])
		return n
	}
	fmt.Fprintf(os.Stderr, "unknown daemon helper %q\n", h)
	return 2
}

// inAnyJob reports whether process h is in a job.
func inAnyJob(h windows.Handle) bool {
	var in int32
	windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob").Call(uintptr(h), 0, uintptr(unsafe.Pointer(&in)))
	return in != 0
}

// TestWinAllowDaemons: a daemon started by contain run -d inside
// contain run --allow-daemons leaves the outer run's job and outlives it:
// -v and the report say it was spared; contain reap --include-daemons
// ends it later. Without --allow-daemons it stays in the job (Windows
// refuses it breakaway), is gone when the outer run returns, and -v says
// the option would have spared it.
func TestWinAllowDaemons(t *testing.T) {
	needContain(t)
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			dir := tmpDir(t)
			path := filepath.Join(dir, "report.json")
			args := []string{"run", "-v", "-g", "1s", "--report", path}
			if allow {
				args = append(args, "--allow-daemons")
			}
			args = append(args, "--", self(t), "x")
			_, wait := startContain(t, asHelper("detacher", dir), args...)
			d := readRecord(t, dir, "daemon")
			readRecord(t, dir, "detacher")
			if d.daemon != "1" || !strings.HasPrefix(d.tag, "CONTAIN:") {
				t.Fatalf("the daemon carries %q, daemon mark %q", d.tag, d.daemon)
			}
			os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
			res := wait()
			wantCode(t, res, 0)
			r := readReport(t, path)
			b, _ := json.Marshal(r.Leftovers)
			var l *report.Leftover
			for i := range r.Leftovers {
				if r.Leftovers[i].PID == d.pid {
					l = &r.Leftovers[i]
				}
			}
			if !allow {
				if !d.goneWithin(0) {
					t.Fatalf("without --allow-daemons the daemon %d outlived the run; stderr:\n%s", d.pid, res.stderr)
				}
				if want := fmt.Sprintf("%d (%s) is marked as a daemon (RUNNING_PROCESS_IS_DAEMON=1): it ends with the group; contain run --allow-daemons would have spared it", d.pid, filepath.Base(self(t))); !strings.Contains(res.stderr, want) {
					t.Errorf("-v does not say %q:\n%s", want, res.stderr)
				}
				if !strings.Contains(res.stderr, "CREATE_BREAKAWAY_FROM_JOB was refused") {
					t.Errorf("the inner contain run -d -v does not say the job refused breakaway:\n%s", res.stderr)
				}
				if l == nil || !l.Daemon || l.Spared || l.EndedBy == "still running" {
					t.Errorf("the daemon's entry in the report: %+v\n%s", l, b)
				}
				return
			}
			if d.goneWithin(500 * time.Millisecond) {
				t.Fatalf("with --allow-daemons the daemon %d did not outlive the run; stderr:\n%s", d.pid, res.stderr)
			}
			if want := fmt.Sprintf("sparing daemon %d (%s): marked RUNNING_PROCESS_IS_DAEMON=1 (--allow-daemons)", d.pid, filepath.Base(self(t))); !strings.Contains(res.stderr, want) {
				t.Errorf("-v does not say %q:\n%s", want, res.stderr)
			}
			if l == nil || !l.Daemon || !l.Spared || l.EndedBy != "spared (--allow-daemons)" || len(l.Argv) == 0 {
				t.Errorf("the daemon's entry in the report: %+v\n%s", l, b)
			}
			reap := run(t, runOpts{}, "reap", "--include-daemons", "--session", d.tag, "-g", "1s")
			wantCode(t, reap, 0)
			if !d.goneWithin(5 * time.Second) {
				t.Fatalf("contain reap --include-daemons --session %s left the daemon running:\n%s%s", d.tag, reap.stdout, reap.stderr)
			}
		})
	}
}

// TestWinAllowDaemonsUnmarked: with --allow-daemons the job permits
// breakaway to every process, but a process that leaves it without the
// daemon mark is put back into it while COMMAND runs, and does not
// outlive the run. (Wine 8 honours breakaway as Windows does: the
// helper sees its child in no job at first.) Without the option,
// breakaway is refused.
func TestWinAllowDaemonsUnmarked(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	_, wait := startContain(t, asHelper("breaker", dir), "run", "-v", "-g", "1s", "--allow-daemons", "--report", path, "--", self(t), "x")
	e := readRecord(t, dir, "escapee")
	// Read until it has its content: under Wine a file written and
	// renamed can be seen empty for a moment (as readRecord knows).
	var broke []byte
	for deadline := time.Now().Add(30 * time.Second); len(broke) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		broke, _ = os.ReadFile(filepath.Join(dir, "broke"))
	}
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	res := wait()
	wantCode(t, res, 0)
	if string(broke) != "in a job at first false, then true" {
		t.Errorf("the helper saw its breakaway child %q; want it out of any job at first, then put back", broke)
	}
	if !e.goneWithin(0) {
		t.Fatalf("the unmarked process %d that left the job outlived the run; stderr:\n%s", e.pid, res.stderr)
	}
	if want := fmt.Sprintf("%d (%s) left the job without RUNNING_PROCESS_IS_DAEMON=1: put it back into the job", e.pid, filepath.Base(self(t))); !strings.Contains(res.stderr, want) {
		t.Errorf("-v does not say %q:\n%s", want, res.stderr)
	}
	if strings.Contains(res.stderr, "sparing daemon") {
		t.Errorf("contain spared an unmarked process:\n%s", res.stderr)
	}
	n := 0
	for _, l := range readReport(t, path).Leftovers {
		if l.PID == e.pid {
			n++
			if l.Spared || l.Daemon || l.EndedBy == "" || l.EndedBy == "still running" {
				t.Errorf("the report says of the unmarked process: %+v", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("the report lists the unmarked process %d times", n)
	}

	dir = tmpDir(t)
	res = run(t, asHelper("breaker", dir), "run", "--", self(t), "x")
	wantCode(t, res, 0)
	if b, _ := os.ReadFile(filepath.Join(dir, "broke")); !strings.HasPrefix(string(b), "refused: ") || !strings.Contains(string(b), "Access") {
		t.Errorf("without --allow-daemons, CREATE_BREAKAWAY_FROM_JOB gave %q, want access denied", b)
	}
}

// TestWinOnTimeout: the --on-timeout command runs when the timeout fires,
// while COMMAND still runs, with CONTAIN_COMMAND_PID, CONTAIN_SESSION and
// CONTAIN_PID; its exit status changes nothing (124). One that runs far
// longer than the grace period is ended with its job after it: contain
// is not held up.
func TestWinOnTimeout(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	hook := fmt.Sprintf(`set CONTAIN_HELPER=hook&& "%s" 5`, self(t))
	_, wait := startContain(t, asHelper("sleep", dir), "run", "-v", "-t", "3", "-g", "5s", "--on-timeout", hook, "--", self(t), "command")
	c := readRecord(t, dir, "command")
	res := wait()
	wantCode(t, res, 124)
	b, err := os.ReadFile(filepath.Join(dir, "hook"))
	if err != nil {
		t.Fatalf("the hook did not run: %v\n%s", err, res.stderr)
	}
	if want := fmt.Sprintf(" running %d CONTAIN:%d %d", c.pid, res.pid, res.pid); !strings.HasSuffix(string(b), want) {
		t.Errorf("the hook saw %q, want ...%q", b, want)
	}
	for _, want := range []string{"on-timeout: running " + hook, "on-timeout: exited 5 after "} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("-v does not say %q:\n%s", want, res.stderr)
		}
	}
	if !c.goneWithin(0) {
		t.Error("COMMAND outlived the run")
	}

	dir = tmpDir(t)
	hook = fmt.Sprintf(`set CONTAIN_HELPER=hook&& "%s" 0 120`, self(t))
	start := time.Now()
	_, wait = startContain(t, asHelper("sleep", dir), "run", "-v", "-t", "2", "-g", "5s", "--on-timeout", hook, "--", self(t), "command")
	c = readRecord(t, dir, "command")
	res = wait()
	took := time.Since(start)
	wantCode(t, res, 124)
	h := readHookRecord(t, dir)
	if !h.goneWithin(10 * time.Second) {
		t.Errorf("the hook %d outlived the run", h.pid)
	}
	// 2 s of timeout, 5 s of grace for the hook (Wine on a busy machine
	// can take more than a second to start cmd.exe and the helper: with
	// -g 1s the hook was once ended before it wrote its record), a
	// second to see it gone, then the close; the hook would sleep for
	// 120 s.
	if took > 60*time.Second {
		t.Errorf("contain took %v with a hook that sleeps 120 s and -g 5s", took)
	}
	if !strings.Contains(res.stderr, "on-timeout: still running after the grace period of 5s: ending it and what it started") {
		t.Errorf("-v does not say the hook was ended:\n%s", res.stderr)
	}
	t.Logf("contain returned after %v", took.Round(time.Millisecond))

	// --cpu-time acts as the timeout: the hook runs first there too.
	dir = tmpDir(t)
	hook = fmt.Sprintf(`set CONTAIN_HELPER=hook&& "%s" 0`, self(t))
	res = run(t, asHelper("spin", dir), "run", "-v", "--cpu-time", "0.5", "-g", "5s", "--on-timeout", hook, "--", self(t), "0")
	wantCode(t, res, 124)
	if b, err := os.ReadFile(filepath.Join(dir, "hook")); err != nil || !strings.Contains(string(b), " running ") {
		t.Errorf("at --cpu-time's end the hook saw %q (%v); stderr:\n%s", b, err, res.stderr)
	}
}

// readHookRecord pins the hook's process, from its record.
func readHookRecord(t *testing.T, dir string) recorded {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "hook"))
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}
	pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return recorded{pid: pid, h: windows.InvalidHandle} // gone already
	}
	t.Cleanup(func() {
		windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	})
	return recorded{pid: pid, h: h}
}

// TestWinStopEvent: setting the event contain run made for contain stop
// closes the group as CTRL_BREAK_EVENT does, and the report says contain
// stop told it to stop.
func TestWinStopEvent(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	_, wait := startContain(t, asHelper("sleep", dir), "run", "-v", "-g", "1s", "--report", path, "--", self(t), "command")
	c := readRecord(t, dir, "command")
	name, _ := windows.UTF16PtrFromString(proc.StopEventName(startContainPID(t, c)))
	ev, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, name)
	if err != nil {
		t.Fatalf("cannot open contain run's stop event %s: %v", proc.StopEventName(startContainPID(t, c)), err)
	}
	defer windows.CloseHandle(ev)
	if err := windows.SetEvent(ev); err != nil {
		t.Fatal(err)
	}
	res := wait()
	if !c.goneWithin(0) {
		t.Fatal("COMMAND outlived the run")
	}
	if !strings.Contains(res.stderr, "told to stop by contain stop") {
		t.Errorf("-v does not say contain stop told it to stop:\n%s", res.stderr)
	}
	if r := readReport(t, path); r.Ending.ToldToStop != "contain stop" {
		t.Errorf("told_to_stop %q, want %q", r.Ending.ToldToStop, "contain stop")
	}
}
