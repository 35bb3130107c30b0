package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/session"
)

// startSleeper starts a sleep that the test kills and waits for at its end.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestPinOriginatorLinux: a live originator is pinned, asked through its
// pidfd, and seen to exit; one that started after the session, a zombie
// and a PID with no process are refused.
func TestPinOriginatorLinux(t *testing.T) {
	me := session.Reaper{UID: os.Getuid(), Root: os.Geteuid() == 0}
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	start := StartOf(pid)
	if _, err := PinOriginator(pid, start-1, me); !errors.Is(err, ErrIdentity) {
		t.Errorf("an originator that started after the session: %v", err)
	}
	if !Lives(ID{PID: pid, Start: start}) {
		t.Fatal("the refused originator was signalled")
	}
	o, err := PinOriginator(pid, start, me)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.PID != pid || o.Start != start || o.Exited() {
		t.Fatalf("pinned %+v, exited %v", o, o.Exited())
	}
	if err := o.Ask(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: a zombie, which has exited.
	deadline := time.Now().Add(5 * time.Second)
	for !o.Exited() {
		if time.Now().After(deadline) {
			t.Fatal("the originator asked with SIGTERM did not exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := PinOriginator(pid, start, me); !errors.Is(err, ErrGone) {
		t.Errorf("a zombie: %v", err)
	}
	if err := o.Ask(syscall.SIGTERM); err != nil && !errors.Is(err, ErrGone) {
		t.Errorf("asking a zombie: %v", err)
	}
	cmd.Wait()
	if err := o.Kill(); !errors.Is(err, ErrGone) {
		t.Errorf("killing a reaped originator: %v", err)
	}
	if _, err := PinOriginator(pid, start, me); !errors.Is(err, ErrGone) {
		t.Errorf("a reaped one: %v", err)
	}
}

// TestPinOriginatorOtherUser: as an ordinary user, another user's
// originator is refused before anything is sent.
func TestPinOriginatorOtherUser(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	me := session.Reaper{UID: os.Getuid() + 1}
	_, err := PinOriginator(pid, StartOf(pid), me)
	if err == nil || errors.Is(err, ErrGone) || errors.Is(err, ErrIdentity) {
		t.Fatalf("another user's originator: %v", err)
	}
	if !Lives(ID{PID: pid, Start: StartOf(pid)}) {
		t.Fatal("another user's originator was signalled")
	}
}

// TestPinOriginatorClaimedLinux: the pin reads the originator's user,
// executable (/proc/PID/exe) and arguments: a sleep is no contain run;
// this test binary, run as "x run", counts as one (the same file as
// /proc/self/exe).
func TestPinOriginatorClaimedLinux(t *testing.T) {
	me := session.Reaper{UID: os.Getuid(), Root: os.Geteuid() == 0}
	cmd := startSleeper(t)
	o, err := PinOriginator(cmd.Process.Pid, StartOf(cmd.Process.Pid), me)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c := o.Claimed()
	if c.UID != os.Getuid() || c.Contain || c.Executable == "" || o.SameExe || len(o.Argv) != 2 || o.Argv[1] != "300" {
		t.Errorf("sleep: %+v, argv %q", c, o.Argv)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(self, "run", "-test.run=^$")
	run.Args[0] = "x"
	// The test binary with no test to run exits at once: pin it while it
	// is stopped at exec, before it runs.
	run.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := run.Start(); err != nil {
		t.Skipf("starting a traced child: %v", err)
	}
	defer func() { run.Process.Kill(); run.Wait() }()
	o2, err := PinOriginator(run.Process.Pid, StartOf(run.Process.Pid), me)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if !o2.SameExe || !o2.Claimed().Contain {
		t.Errorf("this binary run as x run: same %v, %+v, argv %q", o2.SameExe, o2.Claimed(), o2.Argv)
	}
}
