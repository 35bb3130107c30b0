package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/session"
)

// TestOriginatorSleeper is not a test: started by TestPinOriginatorWindows
// with CONTAIN_PROC_SLEEPER set, it sleeps; otherwise it does nothing (it
// does not skip: the Windows tests under Wine allow no skip).
func TestOriginatorSleeper(t *testing.T) {
	if os.Getenv("CONTAIN_PROC_SLEEPER") != "" {
		time.Sleep(2 * time.Minute)
	}
}

func me() session.Reaper {
	return session.Reaper{UID: -1, SID: CurrentOwner(), Root: Privileged()}
}

// TestPinOriginatorWindows: contain stop asks a contain run through the
// stop event that contain run creates (here the test itself plays contain
// run), refuses a process that has none, and terminates one with KILL;
// an originator that started after the session is refused.
func TestPinOriginatorWindows(t *testing.T) {
	name, _ := windows.UTF16PtrFromString(StopEventName(os.Getpid()))
	ev, err := windows.CreateEvent(nil, 0, 0, name)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(ev)
	self, ok := StartOf(os.Getpid())
	if !ok {
		t.Fatal("cannot read the test's own creation time")
	}
	o, err := PinOriginator(os.Getpid(), self, me())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Ask(syscall.SIGTERM); err != nil {
		t.Fatalf("asking through the stop event: %v", err)
	}
	if got, _ := windows.WaitForSingleObject(ev, 5000); got != windows.WAIT_OBJECT_0 {
		t.Fatal("the stop event was not set")
	}
	o.Close()

	exe, _ := os.Executable()
	child := exec.Command(exe, "-test.run=^TestOriginatorSleeper$")
	child.Env = append(os.Environ(), "CONTAIN_PROC_SLEEPER=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	done := make(chan struct{})
	go func() { child.Wait(); close(done) }()
	start, ok := StartOf(child.Process.Pid)
	if !ok {
		t.Fatal("cannot read the child's creation time")
	}
	if _, err := PinOriginator(child.Process.Pid, start-1, me()); !errors.Is(err, ErrIdentity) {
		t.Errorf("an originator that started after the session: %v", err)
	}
	o, err = PinOriginator(child.Process.Pid, start, me())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if err := o.Ask(sig); !errors.Is(err, ErrNoStopEvent) {
			t.Errorf("asking a process without a stop event with %v: %v", sig, err)
		}
	}
	if o.Exited() {
		t.Fatal("the child ended without being terminated")
	}
	if err := o.Ask(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("KILL did not terminate the child")
	}
	if !o.Exited() {
		t.Error("the pin does not see the terminated child as exited")
	}
}
