package run

import (
	"errors"
	"io"
	"os"

	"github.com/contain-cli/contain/internal/events"
	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
)

// The run's events (contain run --events, package events) are emitted
// where -v says the same moments: COMMAND's start (begin), an escapee
// seen (the scans), a daemon spared, a limit exceeded, each signal sent,
// each leftover gone, and the end (Execute). Options.Events is nil
// without them, and every emission is then nothing.

// openEvents opens where s's events go: s.Events, or contain run
// --events (s.EventsTo: "-" is stderr), and starts their Writer, tagged
// with the session's tag. done closes what was opened, once the last
// line is written.
func (s *Spec) openEvents(tag string, stderr io.Writer) (w *events.Writer, done func(), err error) {
	out, closeOut := s.Events, func() {}
	if out == nil {
		if s.EventsTo == "" {
			return nil, func() {}, nil
		}
		if out, closeOut, err = events.Open(s.EventsTo, stderr); err != nil {
			return nil, nil, &SpecError{Option: "events", Err: err}
		}
	}
	w = events.New(out, tag)
	w.OnError = func(err error) {
		if !errors.Is(err, os.ErrClosed) {
			text.Fprintf(stderr, "contain: cannot write the events: %v (no more are written)\n", err)
		}
	}
	return w, func() {
		w.Close()
		closeOut()
	}, nil
}

// emitEnd writes the last line: how the run ended (res nil: COMMAND did
// not start).
func emitEnd(o Options, res *Result, out Outcome) {
	if o.Events == nil {
		return
	}
	e := events.End{Status: out.Status, TimedOut: out.TimedOut, Error: out.Error}
	if res != nil && res.Limit != nil {
		e.Limit = res.Limit.Kind.Key() // the report's name for it
	}
	if res != nil {
		e.Leftovers = len(res.Leftovers)
		if f := res.Facts; f != nil {
			// The report's leftovers, but for the daemons spared.
			e.ToldToStop, e.Leftovers = f.ToldToStop, 0
			for _, l := range f.Leftovers {
				if !l.Spared {
					e.Leftovers++
				}
			}
		}
		emitLimits(o.Events, res.Limits)
	}
	switch {
	case out.Err != nil:
		e.Why = events.EndNotStarted
	case o.Detach:
		e.Why = events.EndDetached
	case o.Hold:
		e.Why = events.EndClosed
	case res.Exited:
		e.ExitCode = &res.Code
	case res.Signaled:
		e.Signal = signals.Name(res.Signal)
	}
	switch {
	case e.Why != "":
	case e.Limit != "":
		e.Why = events.EndLimit
	case out.TimedOut:
		e.Why = events.EndTimeout
	case e.ToldToStop != "":
		e.Why = events.EndStopped
	case res.Signaled:
		e.Why = events.EndSignaled
	default:
		e.Why = events.EndExited
	}
	o.Events.Emit(e)
}

// emitLimits writes a line for each limit w says was exceeded that no
// line said yet (events.Writer.Once): the kernel's own (an OOM kill, a
// refused fork, the throttle) as the run learns of them at its end, and
// any that the moment it was hit did not say.
func emitLimits(ev *events.Writer, w *limit.Watch) {
	if ev == nil || w == nil {
		return
	}
	for _, k := range w.Set.Asked() {
		l, ok := w.Report()[k.Key()]
		if !ok || !l.Exceeded || !ev.Once("limit "+k.Key()) {
			continue
		}
		ev.Emit(events.Limit{Limit: k.Key(), Value: l.Value, Unit: l.Unit, EnforcedBy: l.EnforcedBy, Action: l.Action, HeldBy: l.HeldBy})
	}
}

// emitLimit writes the line of limit k found exceeded (what: what showed
// it; action: what is done, "" for what the Watch recorded), once.
func emitLimit(ev *events.Writer, w *limit.Watch, k limit.Kind, what, action string) {
	if ev == nil || w == nil || !ev.Once("limit "+k.Key()) {
		return
	}
	l := w.Report()[k.Key()]
	if action == "" {
		action = l.Action
	}
	ev.Emit(events.Limit{Limit: k.Key(), Value: w.Set.Value(k), Unit: k.Unit(), EnforcedBy: w.By(k), What: what, Action: action, HeldBy: l.HeldBy})
}

// signalWhy is why a signal sent in phase is sent, for its line: the
// report's phase, or forwarded.
func signalWhy(phase string) string {
	if phase == "" {
		return events.WhyForwarded
	}
	return phase
}
