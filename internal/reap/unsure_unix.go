//go:build linux || darwin

package reap

import (
	"os"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/track"
)

// unsureMargin is how long after its registry's last touch a contain run
// may have lived: a pause between two scans (at most 200 ms), and dying.
const unsureMargin = 500 * time.Millisecond

// Unsure is a process that may belong to a session reap was asked to end,
// and that it could not tell: it started after the session's contain run
// did and before it ended (its registry's time, Registry.Touch), it is the
// user's, its parent is gone (re-parented to PID 1), its environment
// cannot show a tag (written over by a title, cleared, hidden), and no
// registry lists it. A daemon that left every link to its
// session before contain's scans saw it, and whose registry therefore
// lacks it, is such a process; so is anyone else's daemon started since.
type Unsure struct {
	track.Untellable
	Session string
}

// FindUnsure lists, for the sessions want takes whose contain run has
// ended and left a registry (which says when the run started), the processes
// reap could not tell (Unsure), leaving out those in known (reap's
// targets and what it left alone). A session without a registry (another
// tool's, or a clean end's) gives none: nothing says when it began; nor
// does a registry a clean end kept for the daemons it spared (its end
// line): the run saw its session to the end.
func FindUnsure(want func(value string) bool, known map[proc.ID]bool) ([]Unsure, error) {
	regs, err := registry.Read()
	listed := map[proc.ID]bool{}
	var dead []registry.File
	for _, r := range regs {
		for _, m := range r.Members {
			listed[m] = true
		}
		if !r.Headless && !r.Ended && want(r.Value) && !registry.Alive(r) {
			dead = append(dead, r)
		}
	}
	if len(dead) == 0 {
		return nil, err
	}
	entries, serr := proc.Scan()
	if serr != nil {
		return nil, serr
	}
	skip := func(p proc.Entry) bool {
		id := proc.ID{PID: p.PID, Start: p.Start}
		return listed[id] || known[id] || p.PID == os.Getpid()
	}
	seen := map[int]bool{}
	var out []Unsure
	for _, r := range dead {
		// Only what started while contain could still have seen it: its
		// scans touch the registry (Registry.Touch), at most 200 ms apart.
		until := r.Touched.Add(unsureMargin)
		during := func(p proc.Entry) bool { return skip(p) || wallOfStart(p.Start).After(until) }
		found, _ := track.Untold(entries, r.Origin.Start, os.Geteuid(), during, proc.UIDOf, proc.EnvUntellable)
		for _, u := range found {
			if !seen[u.PID] {
				seen[u.PID] = true
				out = append(out, Unsure{Untellable: u, Session: r.Value})
			}
		}
	}
	return out, err
}
