package run

import "github.com/contain-cli/contain/internal/proc"

// releaseFromShim: macOS has no shim.
func (sys *darwinOS) releaseFromShim(proc.Entry) {}

// onlySpared: on macOS contain waits for COMMAND alone (no subreaper), so
// a spared daemon is never its child to wait for.
func (s *sparing) onlySpared() bool { return false }

// claimDaemon: macOS has no abstract sockets, and contain run there
// judges a daemon by the environment it is first seen with alone.
func claimDaemon(int, Logger) {}

// claims: see claimDaemon.
type claims struct{}

// bind: see claimDaemon.
func (s *sparing) bind() {}

// listen: see claimDaemon.
func (s *sparing) listen() (stop func()) { return func() {} }
