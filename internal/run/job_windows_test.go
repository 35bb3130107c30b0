package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestJobPortHandsOn: the job's one port hands each new process to
// watchNew's function, and the limits' messages to the port
// notifications returned, in order, until unforward, which hands on
// what came before it and nothing after.
func TestJobPortHandsOn(t *testing.T) {
	j, err := newJob()
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	var mu sync.Mutex
	var joined []int
	if err := j.watchNew(func(pid int) {
		mu.Lock()
		joined = append(joined, pid)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	fwd, err := j.notifications()
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(fwd)
	ph := startHelper(t, j, "sleep")
	pid, err := windows.GetProcessId(ph)
	if err != nil {
		t.Fatal(err)
	}
	// What Windows posts when a limit is hit (Wine enforces none).
	for _, v := range []uintptr{11, 12} {
		procPostQueuedCompletionStatus.Call(uintptr(j.port), jobMsgJobMemoryLimit, jobKey, v)
	}
	j.unforward()
	procPostQueuedCompletionStatus.Call(uintptr(j.port), jobMsgActiveProcessLimit, jobKey, 13)
	windows.PostQueuedCompletionStatus(fwd, 0, 99, nil)
	var got []uintptr
	for {
		var msg uint32
		var key, value uintptr
		ok, _, err := procGetQueuedCompletionStatus.Call(uintptr(fwd), uintptr(unsafe.Pointer(&msg)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), 5000)
		if ok == 0 {
			t.Fatalf("reading the limits' port: %v", err)
		}
		if key == 99 {
			break
		}
		if msg != jobMsgJobMemoryLimit || key != jobKey {
			t.Errorf("message %d key %d handed on", msg, key)
		}
		got = append(got, value)
	}
	if len(got) != 2 || got[0] != 11 || got[1] != 12 {
		t.Errorf("handed on %v, want [11 12] and nothing after unforward", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(joined)
		first := 0
		if n > 0 {
			first = joined[0]
		}
		mu.Unlock()
		if n > 0 {
			if first != int(pid) {
				t.Errorf("watchNew got %d, the helper is %d", first, pid)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("watchNew was not told of the helper")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPermitBreakaway: a job refuses CREATE_BREAKAWAY_FROM_JOB (access
// denied) unless it permits breakaway; with permitBreakaway, and after
// limit rewrote its flags, a child created with it is in no job and
// outlives the job's end, and kill on close still ends the rest.
func TestPermitBreakaway(t *testing.T) {
	for _, permit := range []bool{false, true} {
		j, err := newJob()
		if err != nil {
			t.Fatal(err)
		}
		if permit {
			if err := j.permitBreakaway(); err != nil {
				t.Fatal(err)
			}
			if err := j.limit(0, 0); err != nil {
				t.Fatal(err)
			}
		}
		// A child is in its creator's job: the breaker helper, in j,
		// is the creator.
		self, _ := os.Executable()
		cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "CONTAIN_RUN_HELPER=breaker")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		ph, err := startInJob(cmd, j, nopLog)
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
		j.close()
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
	if os.Getenv("CONTAIN_RUN_HELPER") == "breaker" {
		// Start a sleeper with CREATE_BREAKAWAY_FROM_JOB, print its PID
		// (or "refused: ERROR"), sleep.
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^TestHelperProcess$")
		c.Env = append(os.Environ(), "CONTAIN_RUN_HELPER=sleep")
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
