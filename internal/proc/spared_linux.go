package proc

import "slices"

// OnlySpared reports whether every live child of process self is among
// spared, and there is at least one: a subreaper (contain, the shim) then
// waits for nothing of the session. A child that has ended but is not
// yet waited for counts as left: the next wait takes it.
func OnlySpared(self int, spared []ID, skip ...int) bool {
	if len(spared) == 0 {
		return false
	}
	procs, err := Scan()
	if err != nil {
		return false
	}
	is := make(map[ID]bool, len(spared))
	for _, id := range spared {
		is[id] = true
	}
	n := 0
	for _, p := range procs {
		if p.PPID != self || slices.Contains(skip, p.PID) {
			continue
		}
		if p.Zombie || !is[ID{PID: p.PID, Start: p.Start}] {
			return false
		}
		n++
	}
	return n > 0
}
