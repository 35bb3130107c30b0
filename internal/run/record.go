package run

import (
	"slices"
	"sync"
	"time"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// recorder gathers what the report and -v's summary say of a run
// (Options.Collect), one account on every OS: the run's moments, the
// processes alive when COMMAND ended (leftovers), those contain ended
// (ended_by_contain), each once, and the last signal (or Windows action)
// each got. The OS's runner reads the processes (by /proc, sysctl or a
// handle) and says how each ended; the recorder keeps the lists.
//
// A nil recorder records nothing: each of its methods does nothing then,
// and nothing that costs anything is read.
type recorder struct {
	facts      account.Facts
	mu         sync.Mutex
	left       []*leftover // alive when COMMAND ended
	ended      []*ending   // signalled by contain to end them
	recorderOS             // what one OS adds (Unix: the rusage and wait statuses of what contain reaped)
}

// leftover is a process alive when COMMAND ended, as the report shows it.
type leftover struct {
	id     proc.ID
	out    report.Leftover
	signal string // the last signal contain sent it (before it was gone, once done)
	done   bool
	spared bool    // a daemon --allow-daemons let go
	ref    procRef // the OS's hold on it (Windows: its handle), until the report is done
}

// ending is a process contain signalled to end it, for the report's
// ended_by_contain.
type ending struct {
	id  proc.ID
	out report.Ended
	ref procRef
}

// started records COMMAND's start and the layers that hold it.
func (rec *recorder) started(layers []string) {
	if rec != nil {
		rec.facts.Started, rec.facts.Layers = time.Now(), layers
	}
}

// commandEnded records the moment COMMAND ended.
func (rec *recorder) commandEnded() {
	if rec != nil {
		rec.facts.CommandEnded = time.Now()
	}
}

// loopEnded records what the main loop did: the first signal (or console
// event) that told contain to stop, and whether --kill-after's SIGKILL
// was sent.
func (rec *recorder) loopEnded(toldToStop string, killedAfterTimeout bool) {
	if rec == nil {
		return
	}
	if rec.facts.ToldToStop == "" {
		rec.facts.ToldToStop = toldToStop
	}
	rec.facts.KilledAfterTimeout = rec.facts.KilledAfterTimeout || killedAfterTimeout
}

// knows reports whether a leftover id is recorded already.
func (rec *recorder) knows(id proc.ID) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.ContainsFunc(rec.left, func(l *leftover) bool { return l.id == id })
}

// addLeftover records l, unless a leftover with its id is recorded
// already (false).
func (rec *recorder) addLeftover(l *leftover) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if slices.ContainsFunc(rec.left, func(k *leftover) bool { return k.id == l.id }) {
		return false
	}
	rec.left = append(rec.left, l)
	return true
}

// addEnding records that contain is about to end process id by sig (a
// signal's name, or the Windows action), and returns what undoes the
// record, for a send that fails: a process already gone was not ended by
// contain. A process recorded already gets sig as its last signal; else
// read, called once, reads it (nil: it cannot be, nothing is recorded),
// and made reports that it was.
func (rec *recorder) addEnding(id proc.ID, sig string, read func() *ending) (undo func(), made bool) {
	if rec == nil {
		return func() {}, false
	}
	rec.mu.Lock()
	for _, e := range rec.ended {
		if e.id == id {
			before := e.out.Signal
			e.out.Signal = sig
			rec.mu.Unlock()
			return func() {
				rec.mu.Lock()
				e.out.Signal = before
				rec.mu.Unlock()
			}, false
		}
	}
	rec.mu.Unlock()
	e := read()
	if e == nil {
		return func() {}, false
	}
	e.id, e.out.Signal = id, sig
	rec.mu.Lock()
	rec.ended = append(rec.ended, e)
	rec.mu.Unlock()
	return func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if i := slices.Index(rec.ended, e); i >= 0 {
			rec.ended = slices.Delete(rec.ended, i, i+1)
		}
	}, true
}

// signalled records sig as the last signal sent to leftover id, if it is
// not done yet, and returns what was recorded before, to be put back if
// the send fails.
func (rec *recorder) signalled(id proc.ID, sig string) (before string) {
	if rec == nil {
		return ""
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.left {
		if l.id == id && !l.done {
			before, l.signal = l.signal, sig
		}
	}
	return before
}

// gone marks done each leftover not done yet for which ended says so,
// with the time since COMMAND ended. How it ended is said when the report
// is finished (finish): its status may come later.
func (rec *recorder) gone(ended func(*leftover) bool) {
	if rec == nil {
		return
	}
	now := time.Now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.left {
		if l.done || !ended(l) {
			continue
		}
		l.done = true
		l.out.EndedAfterSeconds = report.Seconds(now.Sub(rec.facts.CommandEnded))
	}
}

// finish completes the lists once the group is closed: how each leftover
// that is gone ended (leftEnded), how each process contain ended did
// (endedBy, which says "still running" for one that lives), and the
// moment. It returns the facts.
func (rec *recorder) finish(leftEnded func(*leftover) string, endedBy func(*ending) string) *account.Facts {
	if rec == nil {
		return nil
	}
	f := &rec.facts
	f.Ended = time.Now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.left {
		switch {
		case l.spared:
			l.out.EndedBy = sparedEnding
		case l.done:
			l.out.EndedBy = leftEnded(l)
		default:
			l.out.EndedBy = stillRunning
		}
		f.Leftovers = append(f.Leftovers, l.out)
	}
	for _, e := range rec.ended {
		o := &e.out
		o.EndedBy = endedBy(e)
		if len(o.Absent) == 0 {
			o.Absent = nil
		}
		f.EndedByContain = append(f.EndedByContain, *o)
	}
	return f
}

const (
	stillRunning = "still running"            // what a process that outlived the close ended by
	sparedEnding = "spared (--allow-daemons)" // a spared daemon's EndedBy
)
