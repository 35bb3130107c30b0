//go:build !darwin

package track

import "github.com/contain-cli/contain/internal/proc"

// LineageReader: only macOS keeps a process's parent at fork where
// anyone can read it. Linux's tracker goes without (nil): its subreaper,
// cgroup and shim hold what re-parenting would take away.
func LineageReader() func(pid int) (proc.MacIDs, error) { return nil }
