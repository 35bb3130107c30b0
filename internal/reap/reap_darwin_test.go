package reap

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/session"
)

// sleeper runs long, for the tests that reap it (testtool.Sleeper).
var sleeper = testtool.Sleeper()

// TestSleeper is the sleeper when run as it.
func TestSleeper(t *testing.T) { testtool.Sleep(t) }

// TestDarwinReapProcessGroup: a process group's members are reaped without
// a tag (the crash guard's plan), found by the tracker.
func TestDarwinReapProcessGroup(t *testing.T) {
	cmd := testtool.StartSleeper(t, &syscall.SysProcAttr{Setpgid: true})
	pid := cmd.Process.Pid
	o, err := proc.LookupOriginator(0, pid)
	if err != nil || !o.Exists {
		t.Fatal(o, err)
	}
	r := Reap(Plan{Track: track.New(os.Getpid(), pid, o.Start, ""), Signal: unix.SIGTERM, Grace: time.Second})
	if len(r.Processes) != 1 || r.Processes[0].PID != pid || r.Processes[0].Alive {
		t.Errorf("%+v", r.Processes)
	}
	for i := 0; !proc.Darwin.Ended(pid, o.Start); i++ {
		if i == 300 {
			t.Fatal("the group's process still runs")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDarwinReapLeavesRecycled: a choice whose start time differs by one
// microsecond is another process: left alone, not signalled.
func TestDarwinReapLeavesRecycled(t *testing.T) {
	value := "DARWINREAP:" + strconv.Itoa(os.Getpid())
	cmd := testtool.StartSleeper(t, nil, "RUNNING_PROCESS_ORIGINATOR="+value)
	p := listed(t, cmd.Process.Pid, value)
	p.Start++
	r := Reap(Plan{Targets: []session.Choice{{Process: p, Session: value}}, Signal: unix.SIGTERM, Grace: time.Second})
	if len(r.Processes) != 1 || r.Processes[0].Alive {
		t.Errorf("%+v", r.Processes)
	}
	if err := unix.Kill(cmd.Process.Pid, 0); err != nil || proc.Stopped(cmd.Process.Pid) {
		t.Errorf("the process was touched: %v, stopped %v", err, proc.Stopped(cmd.Process.Pid))
	}
}
