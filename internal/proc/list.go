package proc

import (
	"github.com/contain-cli/contain/session"
)

// Listing is every visible tagged process, and how many processes could not
// be read, by reason (they may carry the tag; they are not guessed at).
type Listing struct {
	Procs      []session.Process
	Unreadable map[string]int
	// Registry says why some of contain's registries could not be read
	// (ListForReap); nil when all were.
	Registry error

	ix *nsIndex // what Lookup read of every process, once
}

// Lookup is LookupOriginator for the sessions of this listing: a lookup
// in another PID namespace reads every process's namespace once for the
// listing, not once for each session.
func (l *Listing) Lookup(ns uint64, pid int) (session.Originator, error) {
	if ns == 0 {
		return LookupOriginator(0, pid)
	}
	if l.ix == nil {
		l.ix = newNSIndex()
	}
	return l.ix.lookup(ns, pid)
}
