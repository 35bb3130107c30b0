// Package stop is contain stop: the originators of live sessions asked
// to close their groups, through pins and only when plausibly theirs, the
// wait until the sessions have ended, and --kill. The command prints what
// it did; package containment's Stop returns it.
package stop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// Outcome is what stop did with a session.
type Outcome int

const (
	NothingToStop Outcome = iota // no process of it but daemons (or this contain)
	Asked                        // its originator was asked, through pin
	Orphaned                     // its originator is gone: reap's business
	Refused                      // its originator could not be asked: detail says why
	NotAsked                     // its originator is not plausibly the session's: detail says why
	Ignoring                     // its originator ignores the signal: said at once, not asked
	CannotSee                    // named, and this user cannot see it (proc.Unseen): detail says why
)

// Stopped is one session stop found, and what became of it.
type Stopped struct {
	Value, Tool string
	Key         string // Session.Key: two sessions of one value in two PID namespaces are two
	PID         int
	State       session.State
	Named       bool
	Absent      bool // named, and no process carries it: nothing matched
	Outcome     Outcome
	Detail      string
	Pin         *proc.OriginatorPin // asked: held to the end
	Claimed     session.Claimed     // asked: what was checked of the originator
	// Where names the session's PID namespace where it is not this
	// contain's, and its originator's PID here: " of PID namespace N
	// (PID H here)"; "" in this contain's own.
	Where string
}

// Run is one contain stop.
type Run struct {
	Rq       Request
	W        *watch.Watch
	Sessions []*Stopped
	Reaped   map[proc.ID]reap.Outcome // what --kill did
	TimedOut bool                     // --timeout passed before the sessions ended
	Killed   bool                     // then --kill was used
	Stderr   io.Writer
}

// ask decides what to do with s and, when it is live, asks its
// originator. gone: the originator was found ended (or its PID reused) as
// it was pinned; recheck looks at the session again.
func (st *Run) Ask(s *session.Session) (x *Stopped, gone bool) {
	x = &Stopped{Value: s.Value, Tool: s.Tool, Key: s.Key(), PID: s.PID, State: s.State, Where: s.Where(),
		Named: slices.Contains(st.Rq.Set.Values, s.Value)}
	st.Sessions = append(st.Sessions, x)
	here := s.HerePID()
	if why := session.NeverOriginator(here, st.W.Me); why != "" && (s.NS == 0 || here != 0) {
		x.Outcome, x.Detail = NotAsked, why
		return x, false
	}
	switch {
	case !slices.ContainsFunc(s.Processes, st.stoppable):
		x.Outcome = NothingToStop
		if n := s.Daemons(); n > 0 && !st.Rq.IncludeDaemons {
			x.Detail = text.Plural(n, "daemon", "daemons") + " left running (--include-daemons stops them)"
		}
		return x, false
	case s.State != session.Alive:
		x.Outcome, x.Detail = Orphaned, s.Reason
		return x, false
	}
	// A session of another PID namespace is asked through its
	// originator's PID here, found in its namespace (alive: found).
	pin, err := proc.PinOriginator(here, s.NotAfter, st.W.Me)
	if err == nil {
		// A tag is only a claim: ask the process it names only when it
		// is plausibly the session's originator (session.Implausible).
		x.Claimed = pin.Claimed()
		if why := session.Implausible(s.Tool, x.Claimed, s.Processes, st.W.Me); why != "" {
			pin.Close()
			x.Outcome, x.Detail = NotAsked, why
			return x, false
		}
		if st.ignored(x, pin) && !st.Rq.Kill {
			pin.Close()
			x.Outcome = Ignoring
			return x, false
		}
		if err = pin.Ask(st.Rq.Sig); err != nil {
			pin.Close()
		}
	}
	switch {
	case err == nil:
		x.Outcome, x.Pin = Asked, pin
	case errors.Is(err, proc.ErrGone), errors.Is(err, proc.ErrIdentity):
		x.Outcome = Orphaned
		return x, true
	default:
		x.Outcome, x.Detail = Refused, fmt.Sprintf("cannot ask PID %d: %v", here, err)
	}
	return x, false
}

// ignored reports whether the originator of x, pinned, ignores the
// signal stop is to send (its disposition is SIG_IGN), and then says so
// on stderr at once: without --kill, stop does not wait for a session
// that cannot end by it; with --kill, it is killed after --timeout. The
// dispositions are read by PID, then the pin is checked to be running
// still: the PID named the pinned process all along.
func (st *Run) ignored(x *Stopped, pin *proc.OriginatorPin) bool {
	ign, err := proc.IgnoresSignal(pin.PID, st.Rq.Sig)
	if err != nil || !ign || pin.Exited() {
		return false
	}
	name := signals.Name(st.Rq.Sig)
	x.Detail = fmt.Sprintf("PID %d ignores %s", x.PID, name)
	if st.Rq.Kill {
		text.Fprintf(st.Stderr, "contain: stop: session %s: %s; --kill ends it after %v\n", text.Shorten(text.Printable(x.Value)), x.Detail, st.Rq.Timeout)
		return true
	}
	try := "-t DURATION --kill ends it"
	if term, err := proc.IgnoresSignal(pin.PID, syscall.SIGTERM); st.Rq.Sig != syscall.SIGTERM && err == nil && !term {
		try = "try -s TERM"
	}
	text.Fprintf(st.Stderr, "contain: stop: session %s: %s; not waiting for it (%s)\n", text.Shorten(text.Printable(x.Value)), x.Detail, try)
	return true
}

// stoppable: p makes its session worth asking to stop. A daemon does not
// (unless --include-daemons), nor does this contain; an ancestor of this
// contain does, though it is not waited for: a stop run from inside a
// session stops it (when its originator is not an ancestor too).
func (st *Run) stoppable(p session.Process) bool {
	return p.PID != st.W.Me.PID && (!p.Daemon || st.Rq.IncludeDaemons)
}

// recheck lists again the sessions whose originator ended as it was to be
// asked: one that has nothing left is done (a contain run that ended by
// itself), one with processes left is orphaned.
func (st *Run) Recheck(vanished []*Stopped) error {
	if len(vanished) == 0 {
		return nil
	}
	var keys []string
	for _, s := range vanished {
		keys = append(keys, s.Key)
	}
	st.W.Set = watch.Set{Keys: keys}
	if _, err := st.W.Scan(); err != nil {
		return err
	}
	for _, s := range vanished {
		s.Detail = fmt.Sprintf("PID %d ended before it could be asked", s.PID)
		if st.W.Holding(s.Key) == 0 {
			s.Outcome = NothingToStop
		}
	}
	return nil
}

// unseen is why the session of originator pid cannot be seen (W.Unseen),
// "" when it can or nothing tells, or when stop would never ask pid
// (session.NeverOriginator: PID 1, this contain, its ancestors): there
// is nothing to stop whatever it hides. (As root where PID 1 cannot be
// read, a VM's or a sandbox's init, stop NOPE:1 said it could not see
// the session.)
func (st *Run) unseen(pid int) string {
	if st.W.Unseen == nil || session.NeverOriginator(pid, st.W.Me) != "" {
		return ""
	}
	return st.W.Unseen(pid)
}

// reapHint is the contain reap that ends the orphaned session value, and
// its daemons too when stop was to count them.
func (st *Run) ReapHint(value string) string {
	if st.Rq.IncludeDaemons {
		return "contain reap --include-daemons --session " + text.Shorten(text.Printable(value))
	}
	return "contain reap --session " + text.Shorten(text.Printable(value))
}

// Find is the session of key (Session.Key; a Stopped made without one
// is found by its value).
func (st *Run) Find(key string) *Stopped {
	for _, s := range st.Sessions {
		if s.Key == key || s.Key == "" && s.Value == key {
			return s
		}
	}
	return nil
}

// findValue is a session of value, in any PID namespace.
func (st *Run) findValue(value string) *Stopped {
	for _, s := range st.Sessions {
		if s.Value == value {
			return s
		}
	}
	return nil
}

// Keys lists the sessions with outcome o, by Session.Key.
func (st *Run) Keys(o Outcome) []string {
	var out []string
	for _, s := range st.Sessions {
		if s.Outcome == o {
			out = append(out, s.Key)
		}
	}
	return out
}

// pending reports whether an originator that was asked still runs.
func (st *Run) Pending() bool {
	for _, s := range st.Sessions {
		if s.Pin != nil && !s.Pin.Exited() {
			return true
		}
	}
	return false
}

// killRest is --kill once --timeout has passed: the originators that were
// asked are killed through their pins, and what is left of their
// sessions, orphaned then, is reaped as contain reap would, with SIGKILL
// at once. Only the sessions asked, and of them only the processes that
// their originator plausibly started (its user's, started after it: the
// same check as before asking, session.Implausible) and that reap may
// touch (the user's own unless root, never PID 1, this contain or its
// ancestors): a process that joined a session by its tag alone is left
// alone.
func (st *Run) KillRest() {
	for _, s := range st.Sessions {
		if s.Pin == nil || s.Pin.Exited() {
			continue
		}
		if err := s.Pin.Kill(); err != nil && !errors.Is(err, proc.ErrGone) {
			s.Detail = fmt.Sprintf("cannot kill PID %d: %v", s.PID, err)
		}
	}
	// The sessions count as orphaned, as reap needs, once their
	// originators have exited: a second at most.
	b := proc.NewBackoff()
	for deadline := time.Now().Add(time.Second); st.Pending() && time.Now().Before(deadline); {
		time.Sleep(b.Next())
	}
	o := session.Options{Filter: session.Filter{Keys: st.Keys(Asked)}, IncludeDaemons: st.Rq.IncludeDaemons}
	choose := func() ([]session.Choice, error) {
		chosen, err := reap.Choose(o, st.W.Me)
		st.spareUnclaimed(chosen)
		return chosen, err
	}
	chosen, err := choose()
	if err != nil {
		text.Fprintf(st.Stderr, "contain: stop: cannot list processes to kill: %v\n", err)
		return
	}
	var targets []session.Choice
	for _, ch := range chosen {
		if ch.Skip == "" {
			targets = append(targets, ch)
		}
	}
	r := reap.Reap(reap.Plan{Targets: targets, Rescan: choose, Signal: killSignal})
	for _, o := range r.Processes {
		st.Reaped[proc.ID{PID: o.PID, Start: o.Start}] = o
	}
}

// spareUnclaimed marks, among the processes --kill chose, those it must
// leave alone: a process of a session that was not asked, or one that its
// asked originator cannot have started (another user's, or one started
// before it: session.Implausible on that process), since it joined the
// session by its tag alone.
func (st *Run) spareUnclaimed(chosen []session.Choice) {
	for i := range chosen {
		ch := &chosen[i]
		if ch.Skip != "" {
			continue
		}
		s := st.Find(ch.Key)
		if s == nil || s.Outcome != Asked {
			ch.Skip = "its session was not asked"
		} else if why := session.Implausible(s.Tool, s.Claimed, []session.Process{ch.Process}, st.W.Me); why != "" {
			ch.Skip = "not its originator's: " + why
		}
	}
}

// killSignal is what --kill sends: SIGKILL, TerminateProcess on Windows.
const killSignal = syscall.Signal(9)

func (st *Run) Close() {
	for _, s := range st.Sessions {
		if s.Pin != nil {
			s.Pin.Close()
		}
	}
}

// Do is one contain stop: the sessions of st.Rq.Set listed, their
// originators asked (through pins, when plausibly theirs), then the wait
// until they have ended (st.Rq.Timeout: 0 for ever; or ctx), and --kill.
// done: nothing asked is left. st.W and st.Stderr must be set; New makes such
// a Run.
func (st *Run) Do(ctx context.Context) (done bool, err error) {
	found, err := st.W.Scan()
	if err != nil {
		return false, err
	}
	var vanished []*Stopped
	for i := range found {
		if s, gone := st.Ask(&found[i]); gone {
			vanished = append(vanished, s)
		}
	}
	if err := st.Recheck(vanished); err != nil {
		return false, err
	}
	for _, v := range st.Rq.Set.Values {
		if st.findValue(v) == nil {
			tool, pid, _ := tag.Parse(v)
			x := &Stopped{Value: v, Key: v, Tool: tool, PID: pid, Named: true, Absent: true, Detail: "no process carries it"}
			// No process it can see carries it, and its originator runs
			// hidden (another user's, or /proc mounted hidepid): it
			// cannot be told to have ended, nor asked.
			if why := st.unseen(pid); why != "" {
				x.Outcome, x.Absent, x.Detail = CannotSee, false, why
			}
			st.Sessions = append(st.Sessions, x)
		}
	}
	done = true
	if keys := st.Keys(Asked); len(keys) > 0 {
		st.W.Narrow(keys)
		var deadline time.Time
		if st.Rq.Timeout > 0 {
			deadline = time.Now().Add(st.Rq.Timeout)
		}
		// ctx ending ends the wait as the timeout does.
		if done, err = st.W.Wait(ctx, deadline, st.Pending); err != nil && ctx.Err() == nil {
			return false, err
		}
		st.TimedOut = !done
		if !done && st.Rq.Kill {
			st.Killed = true
			st.KillRest()
			if done, err = st.W.Wait(context.Background(), time.Now().Add(2*time.Second), st.Pending); err != nil {
				return false, err
			}
		}
	}
	return done, nil
}

// New makes a Run of rq on this machine; stderr gets the lines stop says
// as it goes (an originator that ignores the signal; what --kill could not
// list), and is told once of registries that could not be read.
func New(rq Request, stderr io.Writer) *Run {
	return &Run{Rq: rq, W: watch.New(rq.Set, rq.IncludeDaemons, stderr), Reaped: map[proc.ID]reap.Outcome{}, Stderr: stderr}
}

// Request is what contain stop is asked.
type Request struct {
	Set            watch.Set
	Sig            syscall.Signal
	Timeout        time.Duration // 0: wait for ever
	Kill           bool          // after Timeout, kill what is left
	IncludeDaemons bool
}
