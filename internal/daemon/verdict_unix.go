//go:build linux || darwin

package daemon

import (
	"sync"

	"github.com/contain-cli/contain/internal/proc"
)

// Judge is the verdict on a process as a scan first finds it, parent its
// parent in the same scan (nil: not in it), for the tracker's Daemon
// question: Yes when the environment it shows, its own, carries the mark.
// The function returned reuses one buffer: it is asked under the
// tracker's lock, one process at a time.
func Judge() func(p proc.Entry, parent *proc.Entry) Verdict {
	buf := make([]byte, 0, 4096)
	return func(p proc.Entry, parent *proc.Entry) Verdict {
		m, err := MarkOf(p.PID, buf)
		if err != nil || m.Digest == emptyDigest() {
			// Gone (the tracker forgets it), or in the middle of an exec,
			// whose new environment is not there yet.
			return Undecided
		}
		if parent != nil {
			if pm, err := MarkOf(parent.PID, buf); err == nil && pm.Digest == m.Digest {
				return Undecided // its parent's environment: not exec'd yet
			}
		}
		if m.Daemon {
			return Yes
		}
		return No
	}
}

// emptyDigest is the digest of an empty environment, computed when a
// daemon is first judged (not at every start).
var emptyDigest = sync.OnceValue(func() uint64 { return MarkOfEnv(nil).Digest })
