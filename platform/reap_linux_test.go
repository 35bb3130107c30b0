package platform

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/session"
)

// TestReapVerifiesIdentity: reap signals a process only when its start time
// and tag, read again once the pidfd pins it, are those that were seen.
func TestReapVerifiesIdentity(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR=VERIFY:1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var st struct{ Start uint64 }
	for i := 0; ; i++ {
		s, err := readStat(cmd.Process.Pid, nil)
		env, _ := proc.Environ(cmd.Process.Pid, nil)
		if err == nil && strings.Contains(string(env), "VERIFY:1") {
			st.Start = s.Start
			break
		}
		if i > 1000 {
			t.Fatal("sleep did not start")
		}
		time.Sleep(time.Millisecond)
	}
	p := session.Process{PID: cmd.Process.Pid, Start: st.Start, Comm: "sleep", Value: "VERIFY:1"}
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
		r := Reap(ReapPlan{Targets: []session.Choice{ch}, Signal: 15, Grace: time.Second})
		if len(r.Processes) != 1 || !strings.HasPrefix(r.Processes[0].Result, c.want) || r.Processes[0].Alive {
			t.Errorf("%s: %+v, want %q", c.name, r.Processes, c.want)
		}
		time.Sleep(50 * time.Millisecond)
		select {
		case <-exited:
			t.Fatalf("%s: the process was signalled", c.name)
		default:
		}
		if s, _ := readStat(p.PID, nil); s.State == 'T' {
			t.Fatalf("%s: the process was stopped", c.name)
		}
	}
	r := Reap(ReapPlan{Targets: []session.Choice{{Process: p, Session: p.Value}}, Signal: 15, Grace: time.Second})
	if len(r.Processes) != 1 || r.Processes[0].Result != "ended after the first signal" {
		t.Errorf("the real identity: %+v", r.Processes)
	}
	select {
	case <-exited:
	case <-time.After(time.Second):
		t.Fatal("the process was not killed")
	}
}
