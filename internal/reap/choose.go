package reap

import (
	"os"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// Me is who is reaping, for session.Select: this contain, its ancestors,
// its user, and whether it may act on other users' processes.
func Me() session.Reaper {
	return session.Reaper{PID: os.Getpid(), Ancestors: proc.Ancestors(), UID: os.Getuid(), SID: proc.CurrentOwner(), Root: proc.Privileged()}
}

// Choose lists the tagged processes now, and those that the registries of
// contain's own ended sessions name (ListForReap), and returns what reap
// may do to each of those in the sessions o selects, for reaper r.
func Choose(o session.Options, r session.Reaper) ([]session.Choice, error) {
	l, err := ListForReap()
	if err != nil {
		return nil, err
	}
	chosen, _ := session.Select(session.Group(l.Procs, l.Lookup), o, r)
	return chosen, nil
}
