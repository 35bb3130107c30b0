package run

import "github.com/contain-cli/contain/internal/proc"

// releaseFromShim: macOS has no shim.
func (r *runner) releaseFromShim(proc.Entry) {}

// onlySpared: on macOS contain waits for COMMAND alone (no subreaper), so
// a spared daemon is never its child to wait for.
func (r *runner) onlySpared() bool { return false }
