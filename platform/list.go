package platform

import "github.com/contain-cli/contain/session"

// Choose lists the tagged processes now and returns what reap may do to
// each of those in the sessions o selects, for reaper r.
func Choose(o session.Options, r session.Reaper) ([]session.Choice, error) {
	l, err := ListTagged()
	if err != nil {
		return nil, err
	}
	chosen, _ := session.Select(session.Group(l.Procs, LookupOriginator), o, r)
	return chosen, nil
}

// Listing is every visible tagged process, and how many processes could not
// be read, by reason (they may carry the tag; they are not guessed at).
type Listing struct {
	Procs      []session.Process
	Unreadable map[string]int
}
