package job

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

// TestHelperProcess is not a test: started by the tests below with
// CONTAIN_JOB_HELPER set, it plays a process of a job (sleep; the
// breaker is played before the tests run, in init).
func TestHelperProcess(t *testing.T) {
	if os.Getenv("CONTAIN_JOB_HELPER") == "sleep" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// startHelper starts this binary as helper h inside j.
func startHelper(t *testing.T, j *Job, h string) windows.Handle {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "CONTAIN_JOB_HELPER="+h)
	ph, err := j.Start(cmd, nopLog)
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

func nopLog(string, ...any) {}

// TestJobLimitKeepsKillOnClose: setting the job's memory and process
// limits rewrites its limit flags: kill on close must stay among them
// (Wine returns no flags when they are queried back, so this is seen by
// what closing the job does).
func TestJobLimitKeepsKillOnClose(t *testing.T) {
	j, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Limit(256<<20, 8); err != nil {
		j.Close()
		t.Fatalf("setting the job's limits: %v", err)
	}
	ph := startHelper(t, j, "sleep")
	j.Close()
	if ev, err := windows.WaitForSingleObject(ph, 5000); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Fatalf("the job's process outlived the job's handle (wait: %#x, %v)", ev, err)
	}
}

// TestJobSecurity: a job object (the run's, the --on-timeout command's)
// lets only contain's user, SYSTEM and the Administrators open it
// (OwnerOnly, the stop event's security too).
func TestJobSecurity(t *testing.T) {
	j, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(j.h)
	if err := proc.CheckOwnerOnly(j.h, jobAllAccess); err != nil {
		t.Error(err)
	}
}

// TestPermitBreakaway: a job refuses CREATE_BREAKAWAY_FROM_JOB (access
// denied) unless it permits breakaway; with PermitBreakaway, and after
// Limit rewrote its flags, a child created with it is in no job and
// outlives the job's end, and kill on close still ends the rest.
func TestPermitBreakaway(t *testing.T) {
	for _, permit := range []bool{false, true} {
		j, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if permit {
			if err := j.PermitBreakaway(); err != nil {
				t.Fatal(err)
			}
			if err := j.Limit(0, 0); err != nil {
				t.Fatal(err)
			}
		}
		// A child is in its creator's job: the breaker helper, in j,
		// is the creator.
		self, _ := os.Executable()
		cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "CONTAIN_JOB_HELPER=breaker")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		ph, err := j.Start(cmd, nopLog)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, _ := out.Read(buf)
		line := string(buf[:n])
		var child windows.Handle
		var childPID uint32
		if permit {
			if _, err := fmt.Sscan(line, &childPID); err != nil {
				t.Fatalf("permitted: the helper said %q", line)
			}
			child, err = windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_INFORMATION|windows.PROCESS_TERMINATE, false, childPID)
			if err != nil {
				t.Fatal(err)
			}
			if inJob(child, j) {
				t.Error("the child that broke away is in the job")
			}
		} else if want := "refused: " + windows.ERROR_ACCESS_DENIED.Error() + "\n"; line != want {
			t.Errorf("not permitted: the helper said %q, want access denied", line)
		}
		j.Close()
		if ev, _ := windows.WaitForSingleObject(ph, 5000); ev != windows.WAIT_OBJECT_0 {
			t.Error("the job's process outlived its close")
		}
		windows.CloseHandle(ph)
		cmd.Wait()
		if child != 0 {
			if ev, _ := windows.WaitForSingleObject(child, 300); ev == windows.WAIT_OBJECT_0 {
				t.Error("the child that broke away ended with the job")
			}
			windows.TerminateProcess(child, 1)
			windows.CloseHandle(child)
		}
	}
}

func init() {
	if os.Getenv("CONTAIN_JOB_HELPER") == "breaker" {
		// Start a sleeper with CREATE_BREAKAWAY_FROM_JOB, print its PID
		// (or "refused: ERROR"), sleep.
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^TestHelperProcess$")
		c.Env = append(os.Environ(), "CONTAIN_JOB_HELPER=sleep")
		c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB}
		var errno syscall.Errno
		if err := c.Start(); errors.As(err, &errno) {
			fmt.Printf("refused: %v\n", errno)
		} else if err != nil {
			fmt.Printf("failed: %v\n", err)
		} else {
			fmt.Printf("%d\n", c.Process.Pid)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}
