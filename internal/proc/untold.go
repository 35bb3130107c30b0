//go:build linux || darwin

package proc

import "sort"

// Untellable is a process that started during a session and that neither
// the session's tracking nor anything else can tell to be the session's or
// another's: what Untold finds.
type Untellable struct {
	Entry
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
func Untold(procs []Entry, since uint64, uid int, skip func(Entry) bool, uidOf func(int) (int, error), envWhy func(int) string) []Untellable {
	order := make([]Entry, 0)
	for _, p := range procs {
		if p.PID > 1 && !p.Zombie && p.Start >= since && !skip(p) {
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
	var out []Untellable
	for _, p := range order {
		if p.PPID != 1 && !untold[p.PPID] {
			continue
		}
		if u, err := uidOf(p.PID); err != nil || u != uid {
			continue
		}
		why := envWhy(p.PID)
		if why == "" {
			continue
		}
		untold[p.PID] = true
		out = append(out, Untellable{Entry: p, Why: why})
	}
	return out
}
