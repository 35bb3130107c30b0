//go:build linux || windows || darwin

package reap

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// TestReapVerifiesIdentity: reap signals a process only when its start time
// and tag, read again once it is pinned (a pidfd, a process handle), are
// those that were seen: a PID recycled by another process is left alone.
func TestReapVerifiesIdentity(t *testing.T) {
	cmd := exec.Command(sleeper[0], sleeper[1:]...)
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR=VERIFY:1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := listed(t, cmd.Process.Pid, "VERIFY:1")
	for _, c := range []struct {
		name   string
		change func(*session.Choice)
		want   string
	}{
		{"a later start time: another process at that PID", func(c *session.Choice) { c.Start++ }, "left alone: PID"},
		{"another tag", func(c *session.Choice) { c.Session = "VERIFY:2" }, `left alone: its tag changed to "VERIFY:1"`},
	} {
		ch := session.Choice{Process: p, Session: p.Value}
		c.change(&ch)
		r := Reap(Plan{Targets: []session.Choice{ch}, Signal: 15, Grace: time.Second})
		if len(r.Processes) != 1 || !strings.HasPrefix(r.Processes[0].Result(), c.want) || r.Processes[0].Alive {
			t.Errorf("%s: %+v, want %q", c.name, r.Processes, c.want)
		}
		select {
		case <-exited:
			t.Fatalf("%s: the process was signalled", c.name)
		case <-time.After(50 * time.Millisecond):
		}
		if proc.Stopped(p.PID) {
			t.Fatalf("%s: the process was stopped", c.name)
		}
	}
	r := Reap(Plan{Targets: []session.Choice{{Process: p, Session: p.Value}}, Signal: 15, Grace: time.Second})
	if len(r.Processes) != 1 || r.Processes[0].Result() != "ended after the first signal" {
		t.Errorf("the real identity: %+v", r.Processes)
	}
	select {
	case <-exited:
	case <-time.After(time.Second):
		t.Fatal("the process was not killed")
	}
}

// listed waits until ps lists pid with the tag value (it has exec'd), and
// returns it as ps sees it.
func listed(t *testing.T, pid int, value string) session.Process {
	t.Helper()
	for i := 0; i < 200; i++ {
		l, err := proc.ListTagged()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range l.Procs {
			if q.PID == pid && q.Value == value {
				return q
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ps does not list PID %d with %s", pid, value)
	return session.Process{}
}

// TestReapInBatches: with room for two pins at a time, reap still stops,
// signals and kills each of seven processes, closing pins and opening
// them again (and checking the process again through the new one).
func TestReapInBatches(t *testing.T) {
	testBudget = 2
	defer func() { testBudget = 0 }()
	var targets []session.Choice
	var exited []chan struct{}
	for i := 0; i < 7; i++ {
		cmd := exec.Command(sleeper[0], sleeper[1:]...)
		cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR=BATCH:1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		exited = append(exited, done)
		p := listed(t, cmd.Process.Pid, "BATCH:1")
		targets = append(targets, session.Choice{Process: p, Session: p.Value})
	}
	r := Reap(Plan{Targets: targets, Signal: 15, Grace: time.Second})
	if len(r.Processes) != len(targets) {
		t.Fatalf("report: %+v", r.Processes)
	}
	for _, o := range r.Processes {
		if o.Result() != "ended after the first signal" || o.Alive {
			t.Errorf("%d: %q", o.PID, o.Result())
		}
	}
	for i, done := range exited {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("process %d is still running", targets[i].PID)
		}
	}
}

// refusingPin is a pin that refuses every signal with err.
type refusingPin struct{ err error }

func (p refusingPin) Stop() error { return p.err }

func (p refusingPin) Resume() error { return p.err }

func (p refusingPin) Signal(syscall.Signal) error { return p.err }

func (p refusingPin) Kill() error { return p.err }

func (p refusingPin) Close() {}

// TestReapLeftAloneAtSignal: the core reports a process a pin refuses to
// signal because it changed (macOS's check before each kill) as left
// alone, not as a failure; a pin that cannot check is a failure.
func TestReapLeftAloneAtSignal(t *testing.T) {
	for _, c := range []struct {
		err   error
		want  string
		alive bool
	}{
		{&proc.LeftAlone{Err: errors.New(`its tag changed to "X:2"`)}, `left alone: its tag changed to "X:2"`, false},
		{&proc.PinFailure{What: "cannot be checked", Err: syscall.ENOMEM}, "cannot send " + opName(opKill, 0) + ": cannot be checked: " + syscall.ENOMEM.Error(), true},
		{proc.ErrGone, "killed with " + opName(opKill, 0), false},
	} {
		e := &reaper{log: func(string, ...any) {}}
		tg := &target{out: Outcome{Process: session.Process{PID: 5}}, pin: refusingPin{c.err}, killed: true}
		e.do(tg, opKill)
		if tg.out.Result() != c.want || tg.out.Alive != c.alive || !tg.done {
			t.Errorf("%v: %q alive %v, want %q alive %v", c.err, tg.out.Result(), tg.out.Alive, c.want, c.alive)
		}
	}
}
