package track

import "github.com/contain-cli/contain/internal/proc"

// LineageReader reads processes' lineage for the tracker (its
// UniqueIDs): macOS keeps each process's parent at fork (proc_info).
func LineageReader() func(pid int) (proc.MacIDs, error) { return proc.UniqueIDs }
