package containment

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/stop"
	"github.com/contain-cli/contain/internal/watch"
)

// StopOptions choose what Stop asks, as contain stop's options do.
type StopOptions struct {
	// Sessions (TOOL:PID) and every live session of Tools.
	Sessions []string
	Tools    []string
	// Signal asks the originators (0: SIGTERM; on Windows TERM, INT and
	// BREAK set a contain run's stop event).
	Signal syscall.Signal
	// Kill kills, once ctx is done, the originators that were asked and
	// what they plausibly started, as contain stop --kill does after its
	// --timeout.
	Kill bool
	// IncludeDaemons counts processes marked RUNNING_PROCESS_IS_DAEMON=1.
	IncludeDaemons bool
	// Log gets the lines contain stop says as it goes; nil: none.
	Log io.Writer
}

// Stopped is what became of one session.
type Stopped struct {
	Session string
	// Outcome: "asked", "nothing to stop", "orphaned" (contain reap's),
	// "refused" (could not be asked), "not asked" (its originator is not
	// plausibly its own), "ignores the signal", "cannot see" (named, and
	// its originator runs as another user whose processes this user cannot
	// see or read: Detail says why).
	Outcome string
	Detail  string
	Running []int // what still ran when Stop returned
}

var outcomes = map[stop.Outcome]string{stop.NothingToStop: "nothing to stop", stop.Asked: "asked", stop.Orphaned: "orphaned",
	stop.Refused: "refused", stop.NotAsked: "not asked", stop.Ignoring: "ignores the signal", stop.CannotSee: "cannot see"}

// Stop asks the originators of the live sessions named to close their
// groups, as contain stop does: through a pin (a pidfd on Linux, a process
// handle on Windows, a re-check on macOS), only an originator plausibly the
// session's own, and never this program or its ancestors. It waits until
// the sessions asked have ended, or ctx is done (then, with Kill, kills
// what is left of them, and waits two seconds more). done: nothing of the
// sessions asked runs.
func Stop(ctx context.Context, o StopOptions) (out []Stopped, done bool, err error) {
	if o.Signal == 0 {
		o.Signal = syscall.SIGTERM
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	rq := stop.Request{Set: watch.Set{Values: o.Sessions, Tools: o.Tools}, Sig: o.Signal, Kill: o.Kill, IncludeDaemons: o.IncludeDaemons}
	if d, ok := ctx.Deadline(); ok {
		rq.Timeout = max(time.Until(d), time.Nanosecond)
	}
	st := stop.New(rq, log)
	defer st.Close()
	done, err = st.Do(ctx)
	if err != nil {
		return nil, false, err
	}
	left := st.W.LiveIn()
	for _, s := range st.Sessions {
		out = append(out, Stopped{Session: s.Value, Outcome: outcomes[s.Outcome], Detail: s.Detail, Running: left[s.Key]})
	}
	return out, done, nil
}
