package supervise

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a System that writes down what the loop had it do.
type fake struct {
	mu    sync.Mutex
	calls []string
	ended string // the limit that ended the run, as Exceeded claims it
}

func (f *fake) note(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

func (f *fake) SetPhase(p string) { f.note("phase %s", p) }
func (f *fake) Hook(why string)   { f.note("hook (%s)", why) }
func (f *fake) Kill(why string)   { f.note("kill (%s)", why) }
func (f *fake) Signal(why string) string {
	f.note("signal (%s)", why)
	return "sent"
}

// Exceeded claims the end once, as the OSes' limiters do: "cpu" times
// out, anything else kills.
func (f *fake) Exceeded(hit string, timeOut func(string) string) bool {
	if f.ended != "" {
		f.note("exceeded %s: already ended by %s", hit, f.ended)
		return false
	}
	f.ended = hit
	if hit == "cpu" {
		f.note("exceeded cpu: %s", timeOut("cpu time reached"))
		return true
	}
	f.note("exceeded %s: kill", hit)
	return false
}

// clock makes timers that fire when the test says.
type clock struct {
	mu     sync.Mutex
	timers map[time.Duration][]chan time.Time
}

func (c *clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time)
	c.timers[d] = append(c.timers[d], ch)
	return ch
}

// made is how many timers of d the loop made.
func (c *clock) made(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers[d])
}

// fire fires the last timer of d made, and reports whether the loop
// took it (false: the loop no longer waits on it).
func (c *clock) fire(t *testing.T, d time.Duration) bool {
	t.Helper()
	c.mu.Lock()
	ts := c.timers[d]
	c.mu.Unlock()
	if len(ts) == 0 {
		t.Fatalf("no timer of %v was made", d)
	}
	select {
	case ts[len(ts)-1] <- time.Now():
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// step is one thing a test does: send an event, or fire a timer.
type step struct {
	ev   *Event[string]
	fire time.Duration
	// unheard: the timer must not be waited on any more
	unheard bool
}

func ev(k Kind, name string) step { return step{ev: &Event[string]{Kind: k, Name: name}} }
func hit(h string) step {
	return step{ev: &Event[string]{Kind: Limit, Hit: h, CPUTime: h == "cpu"}}
}

// run runs a loop over steps, then COMMAND's end, and returns the loop
// and what the system was told.
func run(t *testing.T, l *Loop[string], steps ...step) (*Loop[string], []string, *clock) {
	t.Helper()
	f := &fake{}
	c := &clock{timers: map[time.Duration][]chan time.Time{}}
	l.Sys, l.After = f, c.After
	in := make(chan Event[string])
	closed := make(chan Event[string])
	close(closed)
	done := make(chan Event[string])
	go func() {
		done <- l.Run(From(closed, func(e Event[string]) Event[string] { return e }), From(in, func(e Event[string]) Event[string] { return e }))
	}()
	// An Other event with nothing to do: once the loop took it, it has
	// done all the step before it asked.
	barrier := func() { in <- Event[string]{Kind: Other} }
	barrier() // the timeout's timer is made
	for _, s := range steps {
		switch {
		case s.ev != nil:
			in <- *s.ev
		case s.unheard:
			if c.fire(t, s.fire) {
				t.Fatalf("the loop still waited on its timer of %v", s.fire)
			}
		default:
			if !c.fire(t, s.fire) {
				t.Fatalf("the loop did not wait on its timer of %v", s.fire)
			}
		}
		barrier()
	}
	ended := false
	in <- Event[string]{Kind: Ended, Do: func() { ended = true }}
	<-done
	if !ended {
		t.Error("the Ended event's Do did not run")
	}
	return l, f.calls, c
}

func TestLoop(t *testing.T) {
	const (
		timeout   = 10 * time.Second
		killAfter = 2 * time.Second
		grace     = 5 * time.Second
	)
	for _, tc := range []struct {
		name  string
		loop  Loop[string]
		steps []step
		want  []string
		// timedOut, killed, told: what the loop says of the run.
		timedOut, killed bool
		told             string
	}{
		{
			name:  "timeout, then --kill-after",
			loop:  Loop[string]{Timeout: timeout, KillAfter: killAfter, Hook: true},
			steps: []step{{fire: timeout}, {fire: killAfter}},
			want: []string{"phase timeout", "hook (timeout after 10s)", "signal (timeout after 10s)",
				"kill (still running 2s after the timeout signal)"},
			timedOut: true, killed: true,
		},
		{
			name:  "no hook without an --on-timeout command",
			loop:  Loop[string]{Timeout: timeout},
			steps: []step{{fire: timeout}},
			want:  []string{"phase timeout", "signal (timeout after 10s)"}, timedOut: true,
		},
		{
			name:  "SIGALRM twice: the hook once, the signal each time, one --kill-after",
			loop:  Loop[string]{KillAfter: killAfter, Hook: true},
			steps: []step{ev(TimeOutNow, "now"), ev(TimeOutNow, "now again"), {fire: killAfter}},
			want: []string{"phase timeout", "hook (now)", "signal (now)", "phase timeout", "signal (now again)",
				"kill (still running 2s after the timeout signal)"},
			timedOut: true, killed: true,
		},
		{
			name:  "told to stop: the grace period, then SIGKILL",
			loop:  Loop[string]{Grace: grace},
			steps: []step{ev(Stop, "SIGTERM"), {fire: grace}},
			want:  []string{"phase told to stop", "kill (still running 5s after being told to stop)"},
			told:  "SIGTERM",
		},
		{
			name:  "told twice: killed at once, the first request named",
			loop:  Loop[string]{Grace: grace},
			steps: []step{ev(Stop, "SIGTERM"), ev(Stop, "SIGINT"), {fire: grace, unheard: true}},
			want:  []string{"phase told to stop", "phase told to stop", "kill ()"},
			told:  "SIGTERM",
		},
		{
			name:  "told to stop without a grace period: killed at once",
			loop:  Loop[string]{},
			steps: []step{ev(Stop, "SIGHUP")},
			want:  []string{"phase told to stop", "kill ()"},
			told:  "SIGHUP",
		},
		{
			name:  "a request that bounds the grace period (the console closes)",
			loop:  Loop[string]{Grace: grace},
			steps: []step{{ev: &Event[string]{Kind: Stop, Name: "CTRL_CLOSE_EVENT", Grace: time.Second}}, {fire: time.Second}},
			want:  []string{"phase told to stop", "kill (still running 1s after being told to stop)"},
			told:  "CTRL_CLOSE_EVENT",
		},
		{
			name:  "the CPU time limit acts as the timeout, and the timer no more",
			loop:  Loop[string]{Timeout: timeout, KillAfter: killAfter, Hook: true},
			steps: []step{hit("cpu"), {fire: timeout, unheard: true}, {fire: killAfter}},
			want: []string{"phase limit", "hook (cpu time reached)", "signal (cpu time reached)", "exceeded cpu: sent",
				"kill (still running 2s after the timeout signal)"},
			timedOut: true, killed: true,
		},
		{
			name:     "the CPU time limit after the timeout: the timeout ended the run",
			loop:     Loop[string]{Timeout: timeout, Hook: true},
			steps:    []step{{fire: timeout}, hit("cpu")},
			want:     []string{"phase timeout", "hook (timeout after 10s)", "signal (timeout after 10s)"},
			timedOut: true,
		},
		{
			name:  "memory kills, with no --kill-after to wait for; a later limit changes nothing",
			loop:  Loop[string]{KillAfter: killAfter},
			steps: []step{hit("memory"), hit("pids")},
			want:  []string{"phase limit", "exceeded memory: kill", "phase limit", "exceeded pids: already ended by memory"},
		},
		{
			name:  "the timeout after the CPU time limit's: no second hook",
			loop:  Loop[string]{Hook: true},
			steps: []step{hit("cpu"), ev(TimeOutNow, "now")},
			want: []string{"phase limit", "hook (cpu time reached)", "signal (cpu time reached)", "exceeded cpu: sent",
				"phase timeout", "signal (now)"},
			timedOut: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, calls, c := run(t, &tc.loop, tc.steps...)
			if !slices.Equal(calls, tc.want) {
				t.Errorf("the system was told:\n\t%s\nwant:\n\t%s", strings.Join(calls, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
			if l.TimedOut != tc.timedOut || l.KilledAfterTimeout != tc.killed || l.ToldToStop != tc.told {
				t.Errorf("timed out %v, killed after it %v, told to stop by %q; want %v, %v, %q",
					l.TimedOut, l.KilledAfterTimeout, l.ToldToStop, tc.timedOut, tc.killed, tc.told)
			}
			if n := c.made(killAfter); n > 1 {
				t.Errorf("%d --kill-after timers: one at most", n)
			}
		})
	}
}

// TestLoopOther: an event the OS alone acts on runs its Do and nothing
// else; COMMAND's end returns at once, whatever timers are armed.
func TestLoopOther(t *testing.T) {
	did := 0
	l, calls, _ := run(t, &Loop[string]{Timeout: time.Hour, Grace: time.Hour},
		step{ev: &Event[string]{Kind: Other, Do: func() { did++ }}},
		step{ev: &Event[string]{Kind: Stop, Name: "SIGTERM", Do: func() { did += 10 }}})
	if did != 11 {
		t.Errorf("Do ran to %d, want 11 (the Other event's once, the Stop's once)", did)
	}
	if !slices.Equal(calls, []string{"phase told to stop"}) || l.TimedOut {
		t.Errorf("the system was told %q, timed out %v", calls, l.TimedOut)
	}
}

// TestLoopNilValue: a source of an interface type may deliver nil (Windows'
// cmd.Wait that returned no error).
func TestLoopNilValue(t *testing.T) {
	waited := make(chan error, 1)
	waited <- nil
	l := &Loop[string]{Sys: &fake{}}
	e := l.Run(From(waited, func(err error) Event[string] { return Event[string]{Kind: Ended, Name: fmt.Sprint(err)} }))
	if e.Kind != Ended || e.Name != "<nil>" {
		t.Errorf("got %+v, want COMMAND's end with a nil error", e)
	}
}
