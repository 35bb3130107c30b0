package containment

import (
	"fmt"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// Listing is what Sessions found: the sessions, and how many processes
// could not be read, by reason (another user's process, as an ordinary
// user: it may carry a tag that is not listed).
type Listing struct {
	Sessions   []session.Session
	Unreadable map[string]int
}

// Sessions lists what contain ps lists: every process that carries
// RUNNING_PROCESS_ORIGINATOR, of contain or of any other tool, grouped by
// session, each session alive or orphaned (its originator gone, or its PID
// taken by a later process), narrowed by f.
func Sessions(f session.Filter) (Listing, error) {
	l, err := proc.ListTagged()
	if err != nil {
		return Listing{}, fmt.Errorf("cannot list processes: %w", err)
	}
	var out []session.Session
	for _, s := range session.Group(l.Procs, proc.LookupOriginator) {
		if f.Match(&s) {
			out = append(out, s)
		}
	}
	return Listing{Sessions: out, Unreadable: l.Unreadable}, nil
}
