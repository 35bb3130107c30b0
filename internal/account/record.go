package account

import (
	"slices"
	"sync"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// Recorder gathers what the report and -v's summary say of a run
// (run.Options.Collect), one account on every OS: the run's moments, the
// processes alive when COMMAND ended (leftovers), those contain ended
// (ended_by_contain), each once, and the last signal (or Windows action)
// each got. The OS's runner reads the processes (by /proc, sysctl or a
// handle) and says how each ended; the Recorder keeps the lists.
//
// A nil *Recorder is the account of a run that asked for none: each
// method does nothing then, and nothing that costs anything is read.
type Recorder struct {
	facts      Facts
	mu         sync.Mutex
	left       []*Leftover // alive when COMMAND ended
	ended      []*Ending   // signalled by contain to end them
	recorderOS             // what one OS adds (Unix: the rusage and wait statuses of what contain reaped)
}

// Leftover is a process alive when COMMAND ended, as the report shows it.
type Leftover struct {
	ID  proc.ID
	Out report.Leftover
	// Signal is the last signal contain sent it (before it was gone,
	// once done); Spared: a daemon --allow-daemons let go.
	Signal string
	Spared bool
	Ref    Ref // the OS's hold on it (Windows: its handle), until the report is done
	done   bool
}

// Ending is a process contain signalled to end it, for the report's
// ended_by_contain.
type Ending struct {
	ID  proc.ID
	Out report.Ended
	Ref Ref
}

// What a process's EndedBy says when it outlived the close, and when it
// was a daemon spared.
const (
	StillRunning = "still running"
	SparedEnding = "spared (--allow-daemons)"
)

// Started records COMMAND's start and the layers that hold it.
func (rec *Recorder) Started(layers []string) {
	if rec != nil {
		rec.facts.Started, rec.facts.Layers = time.Now(), layers
	}
}

// StartedAt is when COMMAND started (the zero time without a Recorder).
func (rec *Recorder) StartedAt() time.Time {
	if rec == nil {
		return time.Time{}
	}
	return rec.facts.Started
}

// Collecting reports whether the run asked for an account (false for
// the nil Recorder): what costs a read only for the report is skipped
// otherwise.
func (rec *Recorder) Collecting() bool { return rec != nil }

// CommandEnded records the moment COMMAND ended.
func (rec *Recorder) CommandEnded() {
	if rec != nil {
		rec.facts.CommandEnded = time.Now()
	}
}

// LoopEnded records what the main loop did: the first signal (or console
// event) that told contain to stop, and whether --kill-after's SIGKILL
// was sent.
func (rec *Recorder) LoopEnded(toldToStop string, killedAfterTimeout bool) {
	if rec == nil {
		return
	}
	if rec.facts.ToldToStop == "" {
		rec.facts.ToldToStop = toldToStop
	}
	rec.facts.KilledAfterTimeout = rec.facts.KilledAfterTimeout || killedAfterTimeout
}

// Untold records the processes tracking alone could not tell.
func (rec *Recorder) Untold(u []report.Untold) {
	if rec != nil {
		rec.mu.Lock()
		rec.facts.Untold = u
		rec.mu.Unlock()
	}
}

// Failure records what broke containment while COMMAND ran.
func (rec *Recorder) Failure(what string) {
	if rec != nil {
		rec.mu.Lock()
		rec.facts.ContainmentFailure = what
		rec.mu.Unlock()
	}
}

// Knows reports whether a leftover id is recorded already (a Recorder
// that records nothing knows every one: nothing is read for it).
func (rec *Recorder) Knows(id proc.ID) bool {
	if rec == nil {
		return true
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.ContainsFunc(rec.left, func(l *Leftover) bool { return l.ID == id })
}

// AddLeftover records l, unless a leftover with its id is recorded
// already (false).
func (rec *Recorder) AddLeftover(l *Leftover) bool {
	if rec == nil {
		return false
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if slices.ContainsFunc(rec.left, func(k *Leftover) bool { return k.ID == l.ID }) {
		return false
	}
	rec.left = append(rec.left, l)
	return true
}

// EachLeftover calls f on each leftover recorded so far.
func (rec *Recorder) EachLeftover(f func(*Leftover)) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	left := slices.Clone(rec.left)
	rec.mu.Unlock()
	for _, l := range left {
		f(l)
	}
}

// AddEnding records that contain is about to end process id by sig (a
// signal's name, or the Windows action), and returns what undoes the
// record, for a send that fails: a process already gone was not ended by
// contain. A process recorded already gets sig as its last signal; else
// read, called once, reads it (nil: it cannot be, nothing is recorded),
// and made reports that it was.
func (rec *Recorder) AddEnding(id proc.ID, sig string, read func() *Ending) (undo func(), made bool) {
	if rec == nil {
		return func() {}, false
	}
	rec.mu.Lock()
	for _, e := range rec.ended {
		if e.ID == id {
			before := e.Out.Signal
			e.Out.Signal = sig
			rec.mu.Unlock()
			return func() {
				rec.mu.Lock()
				e.Out.Signal = before
				rec.mu.Unlock()
			}, false
		}
	}
	rec.mu.Unlock()
	e := read()
	if e == nil {
		return func() {}, false
	}
	e.ID, e.Out.Signal = id, sig
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

// Signalled records sig as the last signal sent to leftover id, if it is
// not done yet, and returns what was recorded before, to be put back if
// the send fails.
func (rec *Recorder) Signalled(id proc.ID, sig string) (before string) {
	if rec == nil {
		return ""
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.left {
		if l.ID == id && !l.done {
			before, l.Signal = l.Signal, sig
		}
	}
	return before
}

// Gone marks done each leftover not done yet (nor spared) for which
// ended says so, with the time since COMMAND ended. How it ended is said
// when the account is finished (Finish): its status may come later.
func (rec *Recorder) Gone(ended func(*Leftover) bool) {
	if rec == nil {
		return
	}
	now := time.Now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range rec.left {
		if l.done || l.Spared || !ended(l) {
			continue
		}
		l.done = true
		l.Out.EndedAfterSeconds = report.Seconds(now.Sub(rec.facts.CommandEnded))
	}
}

// Finish completes the lists once the group is closed: how each leftover
// that is gone ended (leftEnded), how each process contain ended did
// (endedBy, which says StillRunning for one that lives), and the moment.
// It returns the facts (nil without a Recorder), and lets go of the
// processes' Refs (release, when not nil, is called on each).
func (rec *Recorder) Finish(leftEnded func(*Leftover) string, endedBy func(*Ending) string, release func(Ref)) *Facts {
	if rec == nil {
		return nil
	}
	// The lists as they are now: the callbacks ask the Recorder again
	// (Reaped), so they run without its lock.
	rec.mu.Lock()
	left, ended := rec.left, rec.ended
	rec.left, rec.ended = nil, nil
	rec.mu.Unlock()
	f := &rec.facts
	f.Ended = time.Now()
	for _, l := range left {
		switch {
		case l.Spared:
			l.Out.EndedBy = SparedEnding
		case l.done:
			l.Out.EndedBy = leftEnded(l)
		default:
			l.Out.EndedBy = StillRunning
		}
		f.Leftovers = append(f.Leftovers, l.Out)
	}
	for _, e := range ended {
		o := &e.Out
		o.EndedBy = endedBy(e)
		if len(o.Absent) == 0 {
			o.Absent = nil
		}
		f.EndedByContain = append(f.EndedByContain, *o)
	}
	if release != nil {
		for _, l := range left {
			release(l.Ref)
		}
		for _, e := range ended {
			release(e.Ref)
		}
	}
	return f
}
