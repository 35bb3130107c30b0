//go:build linux || darwin

package run

import (
	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/proc"
)

// noLimits is a run's treeLimits when no limit is asked for: nothing to
// sample, hold or account for.
type noLimits struct{}

func (noLimits) enforce() func()                              { return func() {} }
func (noLimits) stop()                                        {}
func (noLimits) count([]proc.Entry)                           {}
func (noLimits) kernelOutcome()                               {}
func (noLimits) holdsStops() bool                             { return false }
func (noLimits) halted() bool                                 { return false }
func (noLimits) hits() <-chan limit.Hit                       { return nil }
func (noLimits) exceeded(limit.Hit, func(string) string) bool { return false }
func (noLimits) reaped(*unix.Rusage)                          {}
func (noLimits) killedBy(int, string, *unix.Rusage)           {}
func (noLimits) finish(*Result)                               {}
func (noLimits) sampledProcs() (int, bool)                    { return 0, false }
func (noLimits) sampled()                                     {}
