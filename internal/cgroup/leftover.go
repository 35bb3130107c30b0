// Package cgroup is contain's use of cgroup v2 on Linux: the group a run
// makes for COMMAND (created, filled by clone, killed, emptied and
// removed, its accounting read), and the groups of dead runs that reap
// finds. Other OSes have none: their FindLeftovers and OfRun are empty.
package cgroup

// Leftover is a cgroup contain-PID whose contain is gone.
type Leftover struct {
	Dir   string
	PID   int    // the contain run's, from the name
	Procs []int  // its processes when found
	Skip  string // why it is left alone, or ""
}
