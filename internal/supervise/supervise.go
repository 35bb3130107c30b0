// Package supervise is what contain run decides, the same on every OS:
// while COMMAND runs (Loop), the timeout and its --kill-after, a request to
// stop and its grace period, a limit found exceeded, the --on-timeout
// command run once; once it has ended (Close), what is left asked to stop,
// given the grace period, then killed. The OS supplies the events (Linux
// and macOS: signals, wait statuses; Windows: console events, the process
// handle) and carries out what is decided (System, Closer); this package
// makes no system call, so its decisions are tested on fakes.
package supervise

import (
	"fmt"
	"reflect"
	"time"

	"github.com/contain-cli/contain/report"
)

// Kind is what an event asks of the loop.
type Kind int

const (
	// Ended: COMMAND ended. Its Do records how; the loop returns.
	Ended Kind = iota + 1
	// Stop: contain was told to stop (SIGTERM, Ctrl-Break, contain
	// stop). Its Do passes the request on to COMMAND; the group is
	// killed a grace period later, or at once on a second request.
	Stop
	// TimeOutNow: time out at once (SIGALRM, as GNU timeout takes it,
	// so that nested runs cascade). Name says why, for -v.
	TimeOutNow
	// Limit: a limit was found exceeded. Hit is the OS's account of it.
	Limit
	// Other: an event only the OS acts on (a job-control stop, a
	// signal to forward, Ctrl-C on Windows). Its Do does it.
	Other
)

// Event is one thing the loop is told. H is the OS's type for a limit
// found exceeded.
type Event[H any] struct {
	Kind Kind
	// Name: for Stop, what asked (SIGTERM, CTRL_BREAK_EVENT), which the
	// report keeps as told_to_stop; for TimeOutNow, why, for -v.
	Name string
	// Do is the OS's own part of the event; nil: none.
	Do func()
	// Grace: for Stop, the longest grace period this request leaves
	// (Windows ends contain 5 s after the console closes); 0: the run's.
	Grace time.Duration
	// CPUTime: for Limit, the hit is the CPU time limit, which acts as
	// the timeout; any other limit kills the tree.
	CPUTime bool
	Hit     H
}

// System carries out what the loop decides.
type System[H any] interface {
	// SetPhase says why what contain ends from now on is ended, for the
	// report's ended_by_contain: report.PhaseTimeout, ...
	SetPhase(phase string)
	// Hook runs the --on-timeout command and waits for it, before the
	// timeout signal; why names what timed out.
	Hook(why string)
	// Signal sends the timeout signal to the group, says so (why: what
	// timed out) and returns what it did, for the report.
	Signal(why string) (did string)
	// Kill ends the group at once. why says what is still running after
	// what; empty: a request to stop repeated, or one without grace.
	Kill(why string)
	// Exceeded acts on a limit found exceeded, unless a limit already
	// ended the run: memory or processes kill the tree; for the CPU time
	// limit it calls timeOut, which times the run out as the timeout
	// does (the --on-timeout command, once, then the signal), and records
	// what it did. It reports whether the run was timed out.
	Exceeded(hit H, timeOut func(why string) (did string)) (timedOut bool)
}

// Loop is one run's supervision. Set the fields, then Run.
type Loop[H any] struct {
	Timeout   time.Duration // 0: none
	KillAfter time.Duration // after the timeout signal; 0: none
	Grace     time.Duration // after a request to stop; 0: kill at once
	Hook      bool          // an --on-timeout command is given
	Sys       System[H]
	// Timing, when set, is told of each signal the timeout sends
	// COMMAND: its own (kill false), then --kill-after's SIGKILL (true),
	// for GNU timeout's --verbose line.
	Timing func(kill bool)
	// After makes the loop's timers; nil: time.After. Tests make them
	// fire when they choose.
	After func(time.Duration) <-chan time.Time

	// What the run came to, once Run returns.
	TimedOut           bool   // the timeout fired, or the CPU time limit acted as it
	ToldToStop         string // the first request to stop, by name
	KilledAfterTimeout bool   // --kill-after's SIGKILL was sent
	hookRan            bool
}

// Source is one channel the loop waits on, with how what it delivers
// becomes an Event.
type Source[H any] struct {
	ch   reflect.Value
	conv func(reflect.Value) Event[H]
}

// From makes ch a source of the loop; a nil ch delivers nothing.
func From[T, H any](ch <-chan T, conv func(T) Event[H]) Source[H] {
	return Source[H]{ch: reflect.ValueOf(ch), conv: func(v reflect.Value) Event[H] {
		var t T // a nil of an interface type (a nil error) asserts to nothing
		if x := v.Interface(); x != nil {
			t = x.(T)
		}
		return conv(t)
	}}
}

// Run waits on the sources and the loop's timers until an Ended event,
// which it returns after its Do.
func (l *Loop[H]) Run(sources ...Source[H]) Event[H] {
	after := l.After
	if after == nil {
		after = time.After
	}
	var timeoutC, killC, stopC <-chan time.Time
	if l.Timeout > 0 {
		timeoutC = after(l.Timeout)
	}
	grace := l.Grace
	stopping := false // told to stop before: a second request kills at once
	// The timers' cases come first, then the sources'; a nil channel's
	// case never fires.
	const nTimers = 3
	cases := make([]reflect.SelectCase, nTimers+len(sources))
	for i, s := range sources {
		cases[nTimers+i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: s.ch}
	}
	timer := func(c <-chan time.Time) reflect.Value {
		if c == nil {
			return reflect.Value{} // ignored
		}
		return reflect.ValueOf(c)
	}
	armKill := func() {
		if l.KillAfter > 0 && killC == nil {
			killC = after(l.KillAfter)
		}
	}
	for {
		cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: timer(timeoutC)}
		cases[1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: timer(killC)}
		cases[2] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: timer(stopC)}
		i, v, ok := reflect.Select(cases)
		switch {
		case i == 0:
			timeoutC = nil
			l.Sys.SetPhase(report.PhaseTimeout)
			l.timeOut(fmt.Sprintf("timeout after %v", l.Timeout))
			armKill()
			continue
		case i == 1:
			killC = nil
			l.KilledAfterTimeout = true
			if l.Timing != nil {
				l.Timing(true)
			}
			l.Sys.Kill(fmt.Sprintf("still running %v after the timeout signal", l.KillAfter))
			continue
		case i == 2:
			stopC = nil
			l.Sys.Kill(fmt.Sprintf("still running %v after being told to stop", grace))
			continue
		case !ok:
			// A source closed: it has nothing more to say.
			cases[i].Chan = reflect.Value{}
			continue
		}
		e := sources[i-nTimers].conv(v)
		switch e.Kind {
		case Ended:
			if e.Do != nil {
				e.Do()
			}
			return e
		case Stop:
			if l.ToldToStop == "" {
				l.ToldToStop = e.Name
			}
			l.Sys.SetPhase(report.PhaseStop)
			if e.Grace > 0 {
				grace = min(grace, e.Grace)
			}
			if e.Do != nil {
				e.Do()
			}
			if stopping || grace == 0 {
				stopC = nil
				l.Sys.Kill("")
			} else {
				stopC = after(grace)
			}
			stopping = true
		case TimeOutNow:
			l.Sys.SetPhase(report.PhaseTimeout)
			l.timeOut(e.Name)
			armKill()
		case Limit:
			if e.CPUTime && l.TimedOut {
				continue // the timeout came first: it is what ended the run
			}
			l.Sys.SetPhase(report.PhaseLimit)
			if l.Sys.Exceeded(e.Hit, l.timeOut) {
				timeoutC = nil // timed out already: the timer would only repeat it
				armKill()
			}
		case Other:
			if e.Do != nil {
				e.Do()
			}
		}
	}
}

// timeOut times the run out: the --on-timeout command, the first time
// only, then the timeout signal, each time (a second SIGALRM sends it
// again, as GNU timeout does).
func (l *Loop[H]) timeOut(why string) string {
	l.TimedOut = true
	if l.Hook && !l.hookRan {
		l.hookRan = true
		l.Sys.Hook(why)
	}
	if l.Timing != nil {
		l.Timing(false)
	}
	return l.Sys.Signal(why)
}
