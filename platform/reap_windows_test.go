package platform

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/session"
)

// TestReapVerifiesIdentity: reap terminates a process only when its
// creation time and tag, read again through the handle that pins it, are
// those that were seen: a PID recycled by another process is left alone.
func TestReapVerifiesIdentity(t *testing.T) {
	cmd := exec.Command("cmd", "/c", "ping -n 60 127.0.0.1 >nul")
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR=VERIFY:1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var p session.Process
	for i := 0; ; i++ {
		l, err := ListTagged()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range l.Procs {
			if q.PID == cmd.Process.Pid && q.Value == "VERIFY:1" {
				p = q
			}
		}
		if p.PID != 0 {
			break
		}
		if i > 100 {
			t.Fatal("ps does not list the tagged process")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		change func(*session.Choice)
		want   string
	}{
		{"another creation time: another process at that PID", func(c *session.Choice) { c.Start++ }, "left alone: PID"},
		{"another tag", func(c *session.Choice) { c.Session = "VERIFY:2" }, `left alone: its tag changed to "VERIFY:1"`},
	} {
		ch := session.Choice{Process: p, Session: p.Value}
		c.change(&ch)
		r := Reap(ReapPlan{Targets: []session.Choice{ch}, Signal: 15, Grace: time.Second})
		if len(r.Processes) != 1 || !strings.HasPrefix(r.Processes[0].Result, c.want) || r.Processes[0].Alive {
			t.Errorf("%s: %+v, want %q", c.name, r.Processes, c.want)
		}
		select {
		case <-exited:
			t.Fatalf("%s: the process was terminated", c.name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	r := Reap(ReapPlan{Targets: []session.Choice{{Process: p, Session: p.Value}}, Signal: 15, Grace: time.Second})
	if len(r.Processes) != 1 || r.Processes[0].Result != "ended after the first signal" {
		t.Errorf("the real identity: %+v", r.Processes)
	}
	select {
	case <-exited:
	case <-time.After(time.Second):
		t.Fatal("the process was not terminated")
	}
}

// TestLookupOriginator: a running process exists with its creation time;
// a PID no process has does not exist.
func TestLookupOriginator(t *testing.T) {
	o, err := LookupOriginator(os.Getpid())
	if err != nil || !o.Exists || o.Zombie || o.Start == 0 {
		t.Fatalf("LookupOriginator(self) = %+v, %v", o, err)
	}
	if started := filetimeToTime(o.Start); time.Since(started) > time.Hour || time.Since(started) < 0 {
		t.Fatalf("this process started at %v", started)
	}
	if o, err := LookupOriginator(2147483644); err != nil || o.Exists {
		t.Fatalf("LookupOriginator(2147483644) = %+v, %v", o, err)
	}
}
