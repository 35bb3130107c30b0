package sigcatch

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain: in a child of the test (SIGCATCH_CHILD set), catch signals and
// report what arrives; Catch takes the handlers for good, so the test
// process itself never calls it.
func TestMain(m *testing.M) {
	if os.Getenv("SIGCATCH_CHILD") != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

var caught = []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGUSR1, unix.SIGCONT, unix.SIGPIPE, 40, 64}

// child catches the signals, sends each to itself (to the process and to
// every thread), and checks that each comes once on the channel; then that
// the runtime still has its own (a nil dereference is a panic that
// recovers, SIGURG preemption goes on). Exit 0: all held.
func child() int {
	c := make(chan os.Signal, 64)
	if err := Catch(caught, c); err != nil {
		println("catch:", err.Error())
		return 2
	}
	if err := Catch(caught, c); err == nil {
		println("a second Catch was taken")
		return 2
	}
	// A busy thread, so that the signals land on threads other than this one.
	for range 1 {
		go func() {
			for x := 0; ; x++ {
				_ = x * x
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	for round := range 20 {
		for _, s := range caught {
			if round%2 == 0 {
				syscall.Kill(os.Getpid(), s)
			} else {
				unix.Tgkill(os.Getpid(), unix.Gettid(), s)
			}
			select {
			case got := <-c:
				if got != s {
					println("sent", int(s), "got", int(got.(syscall.Signal)))
					return 1
				}
			case <-time.After(5 * time.Second):
				println("signal", int(s), "never came")
				return 1
			}
		}
	}
	select {
	case got := <-c:
		println("an extra signal:", int(got.(syscall.Signal)))
		return 1
	case <-time.After(50 * time.Millisecond):
	}
	if !nilPanics() {
		println("a nil dereference did not panic")
		return 1
	}
	// Preemption (SIGURG) still works: a GC stops the busy goroutines.
	runtime.GC()
	return 0
}

func nilPanics() (panicked bool) {
	defer func() { panicked = recover() != nil }()
	var p *int
	return *p == 0
}

func TestCatch(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIGCATCH_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestCatchRefusesRuntimeSignals: the runtime's own are never taken.
func TestCatchRefusesRuntimeSignals(t *testing.T) {
	for _, s := range []syscall.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGURG, unix.SIGPROF, unix.SIGKILL, 32, 33, 34, 0, 65} {
		if err := Catch([]syscall.Signal{s}, make(chan os.Signal)); err == nil {
			t.Fatalf("Catch(%v) taken", s)
		}
	}
	if writeFD != -1 {
		t.Fatal("a refused Catch opened its pipe")
	}
}
