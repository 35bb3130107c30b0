package run

import "github.com/contain-cli/contain/internal/proc"

// releaseFromShim: macOS has no shim.
func (r *runner) releaseFromShim(proc.Entry) {}

// onlySpared: on macOS contain waits for COMMAND alone (no subreaper), so
// a spared daemon is never its child to wait for.
func (r *runner) onlySpared() bool { return false }

// claimDaemon: macOS has no abstract sockets, and contain run there
// judges a daemon by the environment it is first seen with alone.
func claimDaemon(int, Logger) {}

// bindClaims: see claimDaemon.
func (r *runner) bindClaims() {}

// listenClaims: see claimDaemon.
func (r *runner) listenClaims() (stop func()) { return func() {} }
