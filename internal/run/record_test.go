package run

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
	rec := &recorder{}
	rec.started([]string{"cgroup"})
	rec.commandEnded()
	a, b, recycled := proc.ID{PID: 10, Start: 1}, proc.ID{PID: 11, Start: 2}, proc.ID{PID: 10, Start: 9}

	if !rec.addLeftover(&leftover{id: a, out: report.Leftover{PID: 10}}) {
		t.Fatal("the first leftover was not recorded")
	}
	if rec.addLeftover(&leftover{id: a, out: report.Leftover{PID: 10, Comm: "again"}}) {
		t.Error("a leftover was recorded twice")
	}
	if !rec.knows(a) || rec.knows(recycled) {
		t.Error("knows: a recycled PID is another process")
	}
	rec.addLeftover(&leftover{id: b, out: report.Leftover{PID: 11}})
	rec.addLeftover(&leftover{id: recycled, out: report.Leftover{PID: 10}})
	rec.addLeftover(&leftover{id: proc.ID{PID: 12, Start: 3}, out: report.Leftover{PID: 12}, spared: true, done: true})

	reads := 0
	read := func() *ending { reads++; return &ending{out: report.Ended{PID: 10, Phase: report.PhaseClose}} }
	if _, made := rec.addEnding(a, "SIGTERM", read); !made {
		t.Fatal("the first ending was not recorded")
	}
	undo, made := rec.addEnding(a, "SIGKILL", read)
	if made || reads != 1 {
		t.Fatalf("an ending recorded again: made %v, read %d times", made, reads)
	}
	undo() // the SIGKILL failed: SIGTERM stands
	undoB, _ := rec.addEnding(b, "SIGTERM", func() *ending { return &ending{out: report.Ended{PID: 11}} })
	undoB() // the send failed: 11 was not ended by contain
	if _, made := rec.addEnding(proc.ID{PID: 13}, "SIGTERM", func() *ending { return nil }); made {
		t.Error("an ending that could not be read was recorded")
	}

	if before := rec.signalled(a, "SIGTERM"); before != "" {
		t.Errorf("signalled: before %q, want none", before)
	}
	if before := rec.signalled(a, "SIGKILL"); before != "SIGTERM" {
		t.Errorf("signalled: before %q, want SIGTERM", before)
	}
	rec.signalled(a, "SIGTERM") // the SIGKILL failed, put back
	rec.signalled(b, "SIGKILL")

	rec.gone(func(l *leftover) bool { return l.id == a })
	rec.signalled(a, "SIGKILL")                                  // after it is gone: not what ended it
	rec.gone(func(l *leftover) bool { return l.id != recycled }) // the recycled PID still runs

	f := rec.finish(func(l *leftover) string { return "by " + l.signal },
		func(e *ending) string { return "ended after " + e.out.Signal })
	var got []string
	for _, l := range f.Leftovers {
		got = append(got, l.EndedBy)
	}
	if want := []string{"by SIGTERM", "by SIGKILL", stillRunning, sparedEnding}; !reflect.DeepEqual(got, want) {
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

	rec.loopEnded("SIGTERM", false)
	rec.loopEnded("SIGINT", true)
	if rec.facts.ToldToStop != "SIGTERM" || !rec.facts.KilledAfterTimeout {
		t.Errorf("loopEnded: told to stop by %q (want the first, SIGTERM), killed after timeout %v", rec.facts.ToldToStop, rec.facts.KilledAfterTimeout)
	}
}

// TestRecorderNil: without Options.Collect nothing is recorded, and
// nothing is read.
func TestRecorderNil(t *testing.T) {
	var rec *recorder
	rec.started(nil)
	rec.commandEnded()
	rec.loopEnded("SIGTERM", true)
	undo, made := rec.addEnding(proc.ID{PID: 1}, "SIGTERM", func() *ending { t.Error("read without a recorder"); return nil })
	undo()
	rec.signalled(proc.ID{PID: 1}, "SIGTERM")
	rec.gone(func(*leftover) bool { t.Error("asked without a recorder"); return true })
	if made || rec.finish(nil, nil) != nil {
		t.Error("a nil recorder recorded")
	}
}
