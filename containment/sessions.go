package containment

import (
	"context"
	"errors"
	"fmt"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/watch"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// Listing is what Sessions found: the sessions, and how many processes
// could not be read, by reason (another user's process, as an ordinary
// user: it may carry a tag that is not listed).
type Listing struct {
	Sessions   []session.Session
	Unreadable map[string]int
	// Hidden says why other users' processes are not listed at all: /proc
	// is mounted hidepid ("" when it shows every process).
	Hidden string
}

// Sessions lists what contain ps lists: every process that carries
// RUNNING_PROCESS_ORIGINATOR, of contain or of any other tool, grouped by
// session, each session alive or orphaned (its originator gone, or its PID
// taken by a later process), narrowed by f. It also lists, as reap finds
// them, the processes the registry of an ended contain run names (a daemon
// spared by --allow-daemons whose title hides its tag: Registered).
func Sessions(f session.Filter) (Listing, error) {
	// What reap would find: the tagged processes, and what the registries
	// of ended runs name (a spared daemon whose title hides its tag).
	l, err := reap.ListForReap()
	if err != nil {
		return Listing{}, fmt.Errorf("cannot list processes: %w", err)
	}
	var out []session.Session
	for _, s := range session.Group(l.Procs, l.Lookup) {
		if f.Match(&s) {
			out = append(out, s)
		}
	}
	return Listing{Sessions: out, Unreadable: l.Unreadable, Hidden: proc.Hidden()}, nil
}

// ErrCannotSee: a session whose processes this user cannot see (another
// user's, unless root; or hidden by a /proc mounted hidepid): no end of it could be told, so Wait does not wait
// for it.
var ErrCannotSee = errors.New("containment: cannot see the session")

// Wait waits, as contain wait does, until no process of the sessions
// named (TOOL:PID) nor of any session of tools runs, whichever tool
// started them; processes marked RUNNING_PROCESS_IS_DAEMON=1 do not count
// unless includeDaemons. Sessions that no process carries are nothing to
// wait for, unless their originator runs hidden from this user (another
// user's, or /proc mounted hidepid): then ErrCannotSee, never an end. When ctx ends first, it returns what still runs, by session,
// and ctx's error.
func Wait(ctx context.Context, sessions, tools []string, includeDaemons bool) (left map[string][]int, err error) {
	w := watch.New(watch.Set{Values: sessions, Tools: tools}, includeDaemons, nil)
	first, err := w.Scan()
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for i := range first {
		found[first[i].Value] = true
		if s := &first[i]; s.State == session.Alive {
			if why := w.Unseen(s.HerePID()); why != "" {
				return nil, fmt.Errorf("%w %s: %s", ErrCannotSee, s.Value, why)
			}
		}
	}
	// A session named that no process it can see carries, whose
	// originator runs hidden (another user's; /proc mounted hidepid), is
	// not nothing to wait for: it cannot be seen, as contain wait says.
	for _, v := range sessions {
		if _, pid, err := tag.Parse(v); err == nil && !found[v] {
			if why := w.Unseen(pid); why != "" {
				return nil, fmt.Errorf("%w %s: %s", ErrCannotSee, v, why)
			}
		}
	}
	deadline, _ := ctx.Deadline()
	done, err := w.Wait(ctx, deadline, nil)
	if done {
		return nil, nil
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return w.LiveIn(), err
}
