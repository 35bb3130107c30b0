package account

import (
	"reflect"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// TestRecorder runs the recorder both OSes' runners share on plain
// values: each process once, the last signal kept, a failed send undone,
// what is gone marked, and how each ended asked of the OS at the end.
func TestRecorder(t *testing.T) {
	rec := &Recorder{}
	rec.Started([]string{"cgroup"})
	rec.CommandEnded()
	a, b, recycled := proc.ID{PID: 10, Start: 1}, proc.ID{PID: 11, Start: 2}, proc.ID{PID: 10, Start: 9}

	if !rec.AddLeftover(&Leftover{ID: a, Out: report.Leftover{PID: 10}}) {
		t.Fatal("the first leftover was not recorded")
	}
	if rec.AddLeftover(&Leftover{ID: a, Out: report.Leftover{PID: 10, Comm: "again"}}) {
		t.Error("a leftover was recorded twice")
	}
	if !rec.Knows(a) || rec.Knows(recycled) {
		t.Error("knows: a recycled PID is another process")
	}
	rec.AddLeftover(&Leftover{ID: b, Out: report.Leftover{PID: 11}})
	rec.AddLeftover(&Leftover{ID: recycled, Out: report.Leftover{PID: 10}})
	rec.AddLeftover(&Leftover{ID: proc.ID{PID: 12, Start: 3}, Out: report.Leftover{PID: 12}, Spared: true})

	reads := 0
	read := func() *Ending { reads++; return &Ending{Out: report.Ended{PID: 10, Phase: report.PhaseClose}} }
	if _, made := rec.AddEnding(a, "SIGTERM", read); !made {
		t.Fatal("the first ending was not recorded")
	}
	undo, made := rec.AddEnding(a, "SIGKILL", read)
	if made || reads != 1 {
		t.Fatalf("an ending recorded again: made %v, read %d times", made, reads)
	}
	undo() // the SIGKILL failed: SIGTERM stands
	undoB, _ := rec.AddEnding(b, "SIGTERM", func() *Ending { return &Ending{Out: report.Ended{PID: 11}} })
	undoB() // the send failed: 11 was not ended by contain
	if _, made := rec.AddEnding(proc.ID{PID: 13}, "SIGTERM", func() *Ending { return nil }); made {
		t.Error("an ending that could not be read was recorded")
	}

	if before := rec.Signalled(a, "SIGTERM"); before != "" {
		t.Errorf("signalled: before %q, want none", before)
	}
	if before := rec.Signalled(a, "SIGKILL"); before != "SIGTERM" {
		t.Errorf("signalled: before %q, want SIGTERM", before)
	}
	rec.Signalled(a, "SIGTERM") // the SIGKILL failed, put back
	rec.Signalled(b, "SIGKILL")

	rec.Gone(func(l *Leftover) bool { return l.ID == a })
	rec.Signalled(a, "SIGKILL")                                  // after it is gone: not what ended it
	rec.Gone(func(l *Leftover) bool { return l.ID != recycled }) // the recycled PID still runs

	f := rec.Finish(func(l *Leftover) string { return "by " + l.Signal },
		func(e *Ending) string { return "ended after " + e.Out.Signal }, nil)
	var got []string
	for _, l := range f.Leftovers {
		got = append(got, l.EndedBy)
	}
	if want := []string{"by SIGTERM", "by SIGKILL", StillRunning, SparedEnding}; !reflect.DeepEqual(got, want) {
		t.Errorf("leftovers ended by %q, want %q", got, want)
	}
	if len(f.EndedByContain) != 1 || f.EndedByContain[0].PID != 10 || f.EndedByContain[0].EndedBy != "ended after SIGTERM" {
		t.Errorf("ended by contain: %+v, want 10 ended after SIGTERM", f.EndedByContain)
	}
	if f.EndedByContain[0].Absent != nil {
		t.Errorf("an empty absent is left out, got %v", f.EndedByContain[0].Absent)
	}
	if f.Leftovers[0].EndedAfterSeconds == nil || f.Leftovers[2].EndedAfterSeconds != nil {
		t.Error("ended_after_seconds is for what is gone only")
	}
	if !reflect.DeepEqual(f.Layers, []string{"cgroup"}) || f.Started.IsZero() || f.CommandEnded.IsZero() || f.Ended.Before(f.CommandEnded) {
		t.Errorf("moments and layers: %+v", f)
	}

	rec.LoopEnded("SIGTERM", false)
	rec.LoopEnded("SIGINT", true)
	if rec.facts.ToldToStop != "SIGTERM" || !rec.facts.KilledAfterTimeout {
		t.Errorf("loopEnded: told to stop by %q (want the first, SIGTERM), killed after timeout %v", rec.facts.ToldToStop, rec.facts.KilledAfterTimeout)
	}
}

// TestRecorderNil: without Options.Collect nothing is recorded, and
// nothing is read.
func TestRecorderNil(t *testing.T) {
	var rec *Recorder
	rec.Started(nil)
	rec.CommandEnded()
	rec.LoopEnded("SIGTERM", true)
	undo, made := rec.AddEnding(proc.ID{PID: 1}, "SIGTERM", func() *Ending { t.Error("read without a recorder"); return nil })
	undo()
	rec.Signalled(proc.ID{PID: 1}, "SIGTERM")
	rec.Gone(func(*Leftover) bool { t.Error("asked without a recorder"); return true })
	if made || rec.Finish(nil, nil, nil) != nil {
		t.Error("a nil recorder recorded")
	}
}
