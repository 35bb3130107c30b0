package run

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/job"
)

// TestHelperProcess is not a test: started by the tests below with
// CONTAIN_RUN_HELPER set, it plays a process of a job (sleep, spin).
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("CONTAIN_RUN_HELPER") {
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "spin":
		for start := time.Now(); time.Since(start) < time.Minute; {
		}
		os.Exit(0)
	}
}

// startHelper starts this binary as helper h inside j.
func startHelper(t *testing.T, j *job.Job, h string) windows.Handle {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "CONTAIN_RUN_HELPER="+h)
	ph, err := startInJob(cmd, j, nopLog)
	if err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() {
		windows.TerminateProcess(ph, 1)
		windows.CloseHandle(ph)
	})
	return ph
}

// TestProcessTimes: the system snapshot gives a process's CPU time, which
// under Wine GetProcessTimes of another process does not. The test spins
// until the snapshot says it has used 100 ms: a time spun by the clock is
// not CPU time on a loaded machine (CI once saw 80 ms for 300 ms spun).
func TestProcessTimes(t *testing.T) {
	l := &jobLimits{}
	var last processTime
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		}
		times, err := l.processTimes()
		if err != nil {
			t.Fatal(err)
		}
		self, ok := times[os.Getpid()]
		if !ok {
			t.Fatalf("this process (%d) is not in the snapshot of %d processes", os.Getpid(), len(times))
		}
		if self.created == 0 {
			t.Fatalf("the snapshot gives this process no creation time")
		}
		last = self
		if self.cpu >= 100*time.Millisecond {
			return
		}
	}
	t.Errorf("this process spun for 20 s; the snapshot gives it CPU time %v", last.cpu)
}

// TestPauseJob: the --cpus throttle suspends the job's processes for the
// pause (NtSuspendProcess works under Wine) and resumes them after it.
func TestPauseJob(t *testing.T) {
	j, err := job.New()
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ph := startHelper(t, j, "spin")
	pid, err := windows.GetProcessId(ph)
	if err != nil {
		t.Fatal(err)
	}
	r := &winRunner{job: j, log: nopLog}
	l := &jobLimits{r: r}
	r.lim = l
	cpu := func() time.Duration {
		times, err := l.processTimes()
		if err != nil {
			t.Fatal(err)
		}
		return times[int(pid)].cpu
	}
	time.Sleep(200 * time.Millisecond)
	paused := make(chan time.Duration, 1)
	go func() {
		time.Sleep(100 * time.Millisecond) // into the pause
		before := cpu()
		time.Sleep(400 * time.Millisecond)
		paused <- cpu() - before
	}()
	if !l.Pause(800*time.Millisecond, make(chan struct{})) {
		t.Fatal("the pause was cut short")
	}
	if d := <-paused; d > 40*time.Millisecond {
		t.Errorf("the spinning process used %v of CPU time in 400 ms of the pause", d)
	}
	// Resumed, it spins again: 40 ms of CPU time, however long a busy
	// machine takes to give it that (it once got 30 ms in the first
	// 400 ms, beside two CPU hogs and CI's tests); a process still
	// suspended gets none.
	before := cpu()
	for deadline := time.Now().Add(10 * time.Second); cpu()-before < 40*time.Millisecond; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the spinning process used only %v of CPU time in 10 s after the pause: not resumed", cpu()-before)
		}
	}
}
