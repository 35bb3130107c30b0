// Package cgroup is contain's use of cgroup v2 on Linux: the group a run
// makes for COMMAND (created, filled by clone, killed, emptied and
// removed, its accounting read), and the groups of dead runs that reap
// finds. Other OSes have none: their FindLeftovers and OfRun are empty.
package cgroup

import (
	"path/filepath"
	"strings"
)

// Leftover is a cgroup contain-PID whose contain is gone.
type Leftover struct {
	Dir   string
	PID   int    // the contain run's, from the name
	NS    uint64 // the PID namespace of PID where not this contain's own (0)
	Procs []int  // its processes when found
	Skip  string // why it is left alone, or ""
}

// Prefix starts the name of every cgroup contain makes:
// contain-PID, PID being the contain run's.
const Prefix = "contain-"

// ScopeSuffix ends the name of a systemd scope a run asked for.
const ScopeSuffix = ".scope"

// IsScope reports whether dir is the group of a systemd scope a run asked
// for, contain-PID.scope.
func IsScope(dir string) bool {
	name := filepath.Base(dir)
	return strings.HasPrefix(name, Prefix) && strings.HasSuffix(name, ScopeSuffix)
}
