//go:build linux || darwin

package account

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// TestReapedOne: what contain reaped is added up, COMMAND's status kept
// out of the statuses (the run keeps its own), and the peak of one scan
// kept.
func TestReapedOne(t *testing.T) {
	rec := New(true)
	ru := &unix.Rusage{Utime: unix.Timeval{Sec: 1}, Stime: unix.Timeval{Usec: 500000}, Maxrss: 2}
	rec.ReapedOne(10, 10, 0, ru)                   // COMMAND
	rec.ReapedOne(11, 10, unix.WaitStatus(9), ru)  // a leftover killed by SIGKILL
	rec.ReapedOne(12, 10, unix.WaitStatus(0), nil) // the shim reaped it: no rusage
	rec.SawLive(3)
	rec.SawLive(2)
	u := rec.Usage()
	if u.User != 2*time.Second || u.System != time.Second || u.N != 2 || u.Peak != 3 || u.MaxRSS == 0 {
		t.Errorf("usage %+v", u)
	}
	if _, ok := rec.Reaped(10); ok {
		t.Error("COMMAND's status kept among the others'")
	}
	if ws, ok := rec.Reaped(11); !ok || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("Reaped(11) = %v, %v", ws, ok)
	}
	if New(false) != nil {
		t.Error("a run that asked for no account got one")
	}
}

// TestFinishReleases: Finish lets go of every process's Ref, leftovers'
// and endings', once.
func TestFinishReleases(t *testing.T) {
	rec := New(true)
	rec.AddLeftover(&Leftover{ID: proc.ID{PID: 1, Start: 1}})
	rec.AddEnding(proc.ID{PID: 2, Start: 2}, "SIGTERM", func() *Ending { return &Ending{Out: report.Ended{PID: 2}} })
	seen := 0
	rec.EachLeftover(func(*Leftover) { seen++ })
	released := 0
	rec.Finish(func(*Leftover) string { return "" }, func(*Ending) string { return "" }, func(Ref) { released++ })
	if seen != 1 || released != 2 {
		t.Errorf("saw %d leftovers, released %d refs; want 1 and 2", seen, released)
	}
}

// TestFinishAsksAgain: the callbacks of Finish ask the Recorder how a
// process ended (Reaped), as the Unix runner's do; an account that held
// its lock through them hung every run with a report and a leftover.
func TestFinishAsksAgain(t *testing.T) {
	rec := New(true)
	id := proc.ID{PID: 20, Start: 1}
	rec.AddLeftover(&Leftover{ID: id})
	rec.AddEnding(id, "SIGTERM", func() *Ending { return &Ending{} })
	rec.Gone(func(*Leftover) bool { return true })
	rec.ReapedOne(20, 1, unix.WaitStatus(15), nil)
	done := make(chan *Facts)
	go func() {
		done <- rec.Finish(func(l *Leftover) string {
			ws, _ := rec.Reaped(l.ID.PID)
			return proc.EndedBy(l.Signal, ws, true)
		}, func(e *Ending) string {
			_, ok := rec.Reaped(e.ID.PID)
			return map[bool]string{true: "reaped", false: "?"}[ok]
		}, nil)
	}()
	select {
	case f := <-done:
		if f.EndedByContain[0].EndedBy != "reaped" || f.Leftovers[0].EndedBy == "" {
			t.Errorf("facts: %+v", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Finish did not return: its callbacks wait for the Recorder's lock")
	}
}
