//go:build linux || darwin

package track

import (
	"sort"

	"github.com/contain-cli/contain/internal/proc"
)

// Untellable is a process that started during a session and that neither
// the session's tracking nor anything else can tell to be the session's or
// another's: what Untold finds.
type Untellable struct {
	proc.Entry
	Why string
}

// Untold lists, from one scan, the processes that started no earlier than
// since (a session's COMMAND), other than those skip names, whose real
// user is uid, whose environment cannot tell whether they carry the
// session's tag (envWhy says why: written over by a process title,
// hidden, unreadable; "" when it can), and whose parent is gone
// (re-parented to PID 1) or is itself such a process: a daemon that left
// its session and whose tag cannot be read. Their lineage names no one:
// they may be the session's escapees, or anyone's. Parents come before
// their children (oldest first).
//
// unsettled reports that the scan caught such a lineage mid-change: a
// process of the kind looked for whose parent ended while the scan read
// them (absent, a zombie, or gone before its user could be read), so its
// re-parenting to PID 1 is not in this scan yet. A double fork's middle
// exiting as its child is read is one: the child, the one that stays, is
// left out of this scan, and a scan an instant later finds it. A zombie
// that started during the run, re-parented to PID 1, a child of such a
// process or one skip names (a member) is another: the listing may have
// been read before it forked the child that stays, and its stat after it
// ended, so that child is in neither.
func Untold(procs []proc.Entry, since uint64, uid int, skip func(proc.Entry) bool, uidOf func(int) (int, error), envWhy func(int) string) (out []Untellable, unsettled bool) {
	byPID := make(map[int]proc.Entry, len(procs))
	order := make([]proc.Entry, 0)
	var zombies []proc.Entry
	for _, p := range procs {
		byPID[p.PID] = p
		switch {
		case p.PID <= 1 || p.Start < since:
		case p.Zombie:
			zombies = append(zombies, p)
		case !skip(p):
			order = append(order, p)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Start != order[j].Start {
			return order[i].Start < order[j].Start
		}
		return order[i].PID < order[j].PID
	})
	untold := map[int]bool{}
	gone := map[int]bool{}   // looked at, and gone before its user could be read
	looked := map[int]bool{} // its user and environment were read
	for _, p := range order {
		if p.PPID != 1 && !untold[p.PPID] {
			if parent, ok := byPID[p.PPID]; !ok || parent.Zombie || gone[p.PPID] || looked[p.PPID] && vanished(uidOf, p.PPID) {
				unsettled = true
			}
			continue
		}
		if u, err := uidOf(p.PID); err != nil || u != uid {
			if err != nil {
				gone[p.PID] = true
			}
			continue
		}
		looked[p.PID] = true
		why := envWhy(p.PID)
		if why == "" {
			continue
		}
		untold[p.PID] = true
		out = append(out, Untellable{Entry: p, Why: why})
	}
	for _, z := range zombies {
		if z.PPID == 1 || untold[z.PPID] || skip(z) {
			unsettled = true
		}
	}
	return out, unsettled
}

// vanished reports that pid is gone now (its user cannot be read): a parent
// whose environment read as tellable may only have ended meanwhile.
func vanished(uidOf func(int) (int, error), pid int) bool {
	_, err := uidOf(pid)
	return err != nil
}
