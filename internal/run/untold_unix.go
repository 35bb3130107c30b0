//go:build linux || darwin

package run

import (
	"os"
	"slices"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/report"
)

// noteUntold runs once the group is closed with tracking alone, where
// nothing kept the session's orphans in sight (macOS, CONTAIN_DISABLE=
// macos, a shim that died): it looks for the processes of contain's user
// that started during the run and that the tracking could not tell to be
// the session's or another's — their environment written over by a
// process title (redis, nginx) or unreadable (undumpable), their parent
// gone — and says how many, in -v and the report, rather than let "no
// leftovers" stand for what contain could not see. They are not ended:
// nothing says they are the session's.
func (r *runner) noteUntold() {
	if r.complete() || r.track == nil || r.rec == nil && r.o.Log == nil {
		return
	}
	found, err := r.scanUntold()
	if err != nil {
		r.log("cannot list processes to look for what the tracking could not tell: %v", err)
		return
	}
	// One found may be a double fork under way: the child it leaves to
	// PID 1 an instant later is the one that stays, and the scan that
	// found the parent missed it. Look again while the scans differ (a
	// few times at most, and only when something was found).
	for i := 0; i < 5 && len(found) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
		again, err := r.scanUntold()
		if err != nil {
			break
		}
		seen := make(map[proc.ID]bool, len(found))
		for _, u := range found {
			seen[proc.ID{PID: u.PID, Start: u.Start}] = true
		}
		changed := len(again) != len(found)
		for _, u := range again {
			changed = changed || !seen[proc.ID{PID: u.PID, Start: u.Start}]
		}
		// What ended meanwhile (the double fork's middle) is dropped:
		// the report counts what may still be running.
		found = again
		if !changed {
			break
		}
	}
	r.trackMu.Lock()
	since := r.track.Since
	r.trackMu.Unlock()
	if len(found) == 0 {
		return
	}
	r.log("could not tell %d process(es) that started during the run: their environment shows no tag and their parent is gone, so nothing says whether they are the session's; not ended, not counted among the leftovers", len(found))
	var out []report.Untold
	for _, u := range found {
		r.log("could not tell %d (%s): %s", u.PID, u.Comm, u.Why)
		argv := proc.ArgvOf(u.PID)
		if argv == nil {
			argv = []string{}
		}
		ut := report.Untold{PID: u.PID, Comm: u.Comm, Argv: argv, Why: u.Why}
		if r.rec != nil {
			ut.Started = &report.Time{Time: proc.StartWall(u.Start, since, r.rec.facts.Started)}
		}
		out = append(out, ut)
	}
	if r.rec != nil {
		r.rec.mu.Lock()
		r.rec.facts.Untold = out
		r.rec.mu.Unlock()
	}
}

// scanUntold is one scan for what noteUntold looks for.
func (r *runner) scanUntold() ([]proc.Untellable, error) {
	procs, err := proc.Scan()
	if err != nil {
		return nil, err
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	skip := func(p proc.Entry) bool {
		id := proc.ID{PID: p.PID, Start: p.Start}
		return p.PID == r.self || r.track.Skip[p.PID] || r.track.IsMember(id) || r.track.Released(id) || slices.Contains(r.spared, id)
	}
	return proc.Untold(procs, r.track.Since, os.Getuid(), skip, proc.UIDOf, proc.EnvUntellable), nil
}

// containmentFailed records what broke containment while COMMAND ran:
// said on stderr (one line, -v or not), in -v and in the report.
func (r *runner) containmentFailed(what string) {
	if r.o.Log != nil {
		r.log("%s", what) // -v's lines go to stderr: once
	} else {
		Stderr().Write([]byte("contain: " + what + "\n"))
	}
	if r.rec != nil {
		r.rec.mu.Lock()
		r.rec.facts.ContainmentFailure = what
		r.rec.mu.Unlock()
	}
}
