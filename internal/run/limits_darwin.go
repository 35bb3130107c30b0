package run

import (
	"time"

	"github.com/contain-cli/contain/internal/limit"
)

// kernelLimits: macOS's kernel holds no limit of a whole tree. Its
// RLIMIT_AS and RLIMIT_DATA bound one process's virtual size, RLIMIT_CPU
// sends one process a SIGXCPU, RLIMIT_NPROC counts a user's processes:
// contain samples the tree instead, through the tracker's scans.
func (sys *darwinOS) kernelLimits(*limit.Watch) {}

func (sys *darwinOS) kernelWhy(limit.Kind) string {
	return "macOS has no whole-tree limits (its rlimits are per process or per user)"
}

func (sys *darwinOS) freezable() bool                          { return false }
func (sys *darwinOS) freeze(bool) error                        { return nil }
func (sys *darwinOS) frozen() bool                             { return false }
func (sys *darwinOS) sampleGroup(*limiter, *limit.Sample) bool { return false }
func (sys *darwinOS) shimReapedCPU() time.Duration             { return 0 }
func (sys *darwinOS) kernelEvents() limit.Outcome              { return limit.Outcome{} }

// sampled: macOS has no kernel hold to give up.
func (l *limiter) sampled() {}

// forksRefused: macOS's kernel holds no process limit for contain.
func (sys *darwinOS) forksRefused() uint64 { return 0 }
