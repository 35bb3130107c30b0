package containment_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/containment"
)

// The Windows Group: one session, the holder's job object, each command
// the program's own child started into it (held_windows.go). These run
// under Wine (TestWindowsUnderWine in ./tests) on every CI run.

func init() {
	helpers["exit"] = func() {
		// CONTAINMENT_TEST_OUT: where it writes its PID and tag.
		os.WriteFile(os.Getenv("CONTAINMENT_TEST_OUT"), fmt.Appendf(nil, "%d %s", os.Getpid(), os.Getenv("RUNNING_PROCESS_ORIGINATOR")), 0o644)
		code, _ := strconv.Atoi(os.Getenv("CONTAINMENT_TEST_CODE"))
		os.Exit(code)
	}
	helpers["sleep"] = func() { time.Sleep(300 * time.Second) }
	helpers["parent"] = func() {
		// Starts a sleeper in its own console process group, one in a
		// new one, and a middle process that starts a third and exits;
		// writes "SAME NEW ORPHAN" and exits.
		same := startHelper("sleep", nil)
		other := startHelper("sleep", &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP})
		out := os.Getenv("CONTAINMENT_TEST_OUT")
		mid := startHelperCmd("middle", nil, "CONTAINMENT_TEST_OUT="+out+".orphan")
		mid.Wait()
		orphan, _ := os.ReadFile(out + ".orphan")
		os.WriteFile(out, fmt.Appendf(nil, "%d %d %s", same, other, orphan), 0o644)
	}
	helpers["middle"] = func() {
		orphan := startHelper("sleep", nil)
		os.WriteFile(os.Getenv("CONTAINMENT_TEST_OUT"), []byte(strconv.Itoa(orphan)), 0o644)
	}
}

// startHelper starts this binary as helper name, with attr, and returns
// its PID (in a helper: it exits on failure).
func startHelper(name string, attr *syscall.SysProcAttr) int {
	return startHelperCmd(name, attr).Process.Pid
}

func startHelperCmd(name string, attr *syscall.SysProcAttr, env ...string) *exec.Cmd {
	self, _ := os.Executable()
	c := exec.Command(self)
	c.Env = append(append(os.Environ(), "CONTAINMENT_TEST_HELPER="+name), env...)
	c.SysProcAttr = attr
	if err := c.Start(); err != nil {
		os.Exit(9)
	}
	return c
}

// helperCmd is this test binary playing helper name, writing to out.
func helperCmd(t *testing.T, name, out string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), "CONTAINMENT_TEST_HELPER="+name, "CONTAINMENT_TEST_OUT="+out), env...)
	return cmd
}

// tempDir is a directory for one test: below CONTAIN_TEST_TMP where the
// Wine harness sets it (Wine cannot remove what t.TempDir made: "Invalid
// function"), else t.TempDir.
func tempDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CONTAIN_TEST_TMP")
	if base == "" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp(base, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newGroup(t *testing.T, o containment.Options) *containment.Group {
	t.Helper()
	g, err := containment.NewGroup(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// alive reports whether pid runs; a handle opened once is kept until the
// test's end, so that the PID is not taken again meanwhile.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, _ := windows.WaitForSingleObject(h, 0)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

// pinned opens pid for SYNCHRONIZE and keeps it until the test's end.
func pinned(t *testing.T, pid int) windows.Handle {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	t.Cleanup(func() {
		windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	})
	return h
}

// gone waits up to d for h to end.
func gone(h windows.Handle, d time.Duration) bool {
	ev, _ := windows.WaitForSingleObject(h, uint32(d/time.Millisecond))
	return ev == windows.WAIT_OBJECT_0
}

// TestHeldWindows: the command is cmd.Process (the program's own child),
// tagged with the holder's PID, which is not the command's; Wait says its
// exit code.
func TestHeldWindows(t *testing.T) {
	g := newGroup(t, containment.Options{Originator: "HELDWIN", Grace: time.Second})
	for _, code := range []int{0, 3} {
		out := filepath.Join(tempDir(t), "out")
		cmd := helperCmd(t, "exit", out, fmt.Sprintf("CONTAINMENT_TEST_CODE=%d", code))
		if err := g.Start(cmd); err != nil {
			t.Fatal(err)
		}
		if g.Pid(cmd) != cmd.Process.Pid {
			t.Errorf("Group.Pid says %d, cmd.Process is %d: want the command in both", g.Pid(cmd), cmd.Process.Pid)
		}
		err := g.Wait(cmd)
		var e *containment.ExitError
		switch {
		case code == 0 && err != nil:
			t.Errorf("exit 0: Wait says %v", err)
		case code != 0 && (!errors.As(err, &e) || e.Code != code || e.Status != code || e.TimedOut):
			t.Errorf("exit %d: Wait says %#v", code, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		holder := strings.TrimPrefix(g.Tag(), "HELDWIN:")
		if len(f) != 2 || f[0] != strconv.Itoa(cmd.Process.Pid) || f[1] != g.Tag() || holder == f[0] || holder == g.Tag() {
			t.Errorf("the command wrote %q; cmd.Process %d, Tag %q: want its own PID and the holder's tag", b, cmd.Process.Pid, g.Tag())
		}
	}
}

// TestHeldTimeoutWindows: Options.Timeout is each command's: the command
// ends (a console event, or terminated where Wine has none) and Wait
// says 124.
func TestHeldTimeoutWindows(t *testing.T) {
	g := newGroup(t, containment.Options{Originator: "HELDWINT", Timeout: 300 * time.Millisecond, KillAfter: 5 * time.Second, Grace: time.Second})
	cmd := helperCmd(t, "sleep", "")
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	err := g.Wait(cmd)
	var e *containment.ExitError
	if !errors.As(err, &e) || !e.TimedOut || e.Status != 124 {
		t.Fatalf("Wait says %#v, want a timeout with status 124", err)
	}
}

// TestHeldWaitWindows: Wait ends what the command started, its console
// process group or another: on Windows a process keeps its parent's PID
// after the parent ended, so the command's tree is known after its end.
// A process whose chain to the command broke (the process between ended)
// is the session's, and Close ends it.
func TestHeldWaitWindows(t *testing.T) {
	g := newGroup(t, containment.Options{Originator: "HELDWINW", Grace: time.Second, Reports: true})
	out := filepath.Join(tempDir(t), "out")
	cmd := helperCmd(t, "parent", out)
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(cmd); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	b, err := os.ReadFile(out)
	f := strings.Fields(string(b))
	if err != nil || len(f) != 3 {
		t.Fatalf("the command wrote %q (%v)", b, err)
	}
	var pids [3]int
	for i := range f {
		pids[i], _ = strconv.Atoi(f[i])
	}
	orphan := pinned(t, pids[2])
	for _, pid := range pids[:2] {
		if alive(t, pid) {
			t.Errorf("%d, which the command started, outlived Wait", pid)
		}
	}
	if gone(orphan, 0) {
		t.Fatalf("%d, whose parent ended before the command, ended with the command: it is the session's until Close", pids[2])
	}
	reports, err := g.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !gone(orphan, 10*time.Second) {
		t.Errorf("%d outlived Close", pids[2])
	}
	if len(reports) != 1 {
		t.Errorf("Close gave %d reports, want the session's one", len(reports))
	}
}

// longCommand is a command that runs until it is ended: this test binary
// sleeping.
func longCommand(t *testing.T) *exec.Cmd { return helperCmd(t, "sleep", "") }

// closeRaceRounds and closeRaceStep: TestCloseWhileStarting's rounds and
// the step of the wait before Close (under Wine a process takes tens of
// milliseconds to start).
const (
	closeRaceRounds = 10
	closeRaceStep   = 20 * time.Millisecond
)
