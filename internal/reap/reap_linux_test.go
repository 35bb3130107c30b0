package reap

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/session"
)

// sleeper runs long, for the tests that reap it.
var sleeper = []string{"sleep", "30"}

// TestReapChecksTagOnceStopped: a process that execs with another
// session's tag between reap's check and its stop is not signalled: once
// stopped, its tag is read again, and it is resumed and left alone.
func TestReapChecksTagOnceStopped(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap 'exec env RUNNING_PROCESS_ORIGINATOR=STOPCHECK:2 sleep 30' USR1; while :; do sleep 0.01; done`)
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR=STOPCHECK:1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := listed(t, cmd.Process.Pid, "STOPCHECK:1")
	// SIGUSR1 would end it until the trap is set.
	for i := 0; !catches(p.PID, unix.SIGUSR1); i++ {
		if i == 500 {
			t.Fatal("the shell does not catch SIGUSR1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	testHookBeforeStop = func(pid int) {
		if pid != p.PID {
			return
		}
		// The window between the check and the stop: it execs with the
		// other session's tag.
		unix.Kill(pid, unix.SIGUSR1)
		for i := 0; i < 500; i++ {
			if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); strings.Contains(string(env), "=STOPCHECK:2\x00") {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("the process did not exec with the other tag")
	}
	defer func() { testHookBeforeStop = nil }()
	r := Reap(Plan{Targets: []session.Choice{{Process: p, Session: p.Value}}, Signal: unix.SIGTERM, Grace: 100 * time.Millisecond})
	want := `left alone: its tag changed to "STOPCHECK:2" once stopped; resumed it`
	if len(r.Processes) != 1 || r.Processes[0].Result() != want || r.Processes[0].Alive {
		t.Errorf("report: %+v, want %q", r.Processes, want)
	}
	select {
	case <-exited:
		t.Fatal("the process of the other session was killed")
	case <-time.After(100 * time.Millisecond):
	}
	if s, _ := proc.ReadStat(p.PID, nil); s.State == 'T' {
		t.Fatal("the process of the other session was left stopped")
	}
}

// catches reports whether pid has a handler for sig (SigCgt in its status).
func catches(pid int, sig unix.Signal) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "SigCgt:\t"); ok {
			mask, err := strconv.ParseUint(hex, 16, 64)
			return err == nil && mask&(1<<(sig-1)) != 0
		}
	}
	return false
}

// TestReapTrackedBeforeTag: a member of the session that was listed by its
// tag and then wrote its title over its environment (redis, nginx) is
// still ended when the tracker holds it: the guard and the shim check what
// their tracker found by its identity, not by a tag that is gone. Before,
// the tag's check came first and left the nginx master alone ("it no
// longer carries RUNNING_PROCESS_ORIGINATOR"), and it respawned workers.
func TestReapTrackedBeforeTag(t *testing.T) {
	const value = "TITLED:1"
	testtool.Need(t, "perl", "perl-base")
	cmd := exec.Command("perl", "-e", `$SIG{USR1} = sub { $0 = "titled " . ("x" x 100000) }; sleep 1 while 1`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "RUNNING_PROCESS_ORIGINATOR=" + value}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := listed(t, cmd.Process.Pid, value)
	for i := 0; !catches(p.PID, unix.SIGUSR1); i++ {
		if i == 500 {
			t.Fatal("perl does not catch SIGUSR1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	unix.Kill(p.PID, unix.SIGUSR1)
	for i := 0; ; i++ {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if !strings.Contains(string(env), value) {
			break
		}
		if i == 500 {
			t.Fatal("perl did not write over its environment")
		}
		time.Sleep(10 * time.Millisecond)
	}
	track := track.New(os.Getpid(), 0, 0, value)
	track.Remember(p.PID, p.Start)
	r := Reap(Plan{Targets: []session.Choice{{Process: p, Session: p.Value}}, Track: track,
		Signal: unix.SIGTERM, Grace: 100 * time.Millisecond})
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		t.Fatalf("the tracked process was not ended: %+v", r.Processes)
	}
}
