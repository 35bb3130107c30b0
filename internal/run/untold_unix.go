//go:build linux || darwin

package run

import (
	"os"
	"time"

	"github.com/contain-cli/contain/internal/nosigpipe"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/internal/track"
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
	if r.sys.complete() || r.track == nil || !r.rec.Collecting() && r.o.Log == nil {
		return
	}
	found, unsettled, err := r.scanUntold()
	if err != nil {
		r.log("cannot list processes to look for what the tracking could not tell: %v", err)
		return
	}
	// One found may be a double fork under way: the child it leaves to
	// PID 1 an instant later is the one that stays, and the scan that
	// found the parent missed it; or the scan read the child while its
	// parent was ending (unsettled), and found nothing. Look again while
	// the scans differ or one is unsettled (a few times at most, and only
	// then).
	for i := 0; i < 5 && (len(found) > 0 || unsettled); i++ {
		time.Sleep(50 * time.Millisecond)
		again, moving, err := r.scanUntold()
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
		found, unsettled = again, moving
		if !changed && !unsettled {
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
		argv := r.procs.argvOf(u.PID)
		if argv == nil {
			argv = []string{}
		}
		ut := report.Untold{PID: u.PID, Comm: u.Comm, Argv: argv, Why: u.Why}
		if r.rec.Collecting() {
			ut.Started = &report.Time{Time: proc.StartWall(u.Start, since, r.rec.StartedAt())}
		}
		out = append(out, ut)
	}
	r.rec.Untold(out)
}

// scanUntold is one scan for what noteUntold looks for, and whether it
// caught a lineage mid-change (track.Untold).
func (r *runner) scanUntold() ([]track.Untellable, bool, error) {
	procs, err := r.procs.scan()
	if err != nil {
		return nil, false, err
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	skip := func(p proc.Entry) bool {
		id := proc.ID{PID: p.PID, Start: p.Start}
		return p.PID == r.self || r.track.Skip[p.PID] || r.track.IsMember(id) || r.track.Released(id) || r.daemons.isSpared(id)
	}
	found, unsettled := track.Untold(procs, r.track.Since, os.Getuid(), skip, proc.UIDOf, proc.EnvUntellable)
	return found, unsettled, nil
}

// containmentFailed records what broke containment while COMMAND ran:
// said on stderr (one line, -v or not), in -v and in the report.
func (r *runner) containmentFailed(what string) {
	if r.o.Log != nil {
		r.log("%s", what) // -v's lines go to stderr: once
	} else {
		text.Line(nosigpipe.Stderr(), "contain: ", what)
	}
	r.rec.Failure(what)
}
