package supervise

import (
	"time"

	"github.com/contain-cli/contain/internal/proc"
)

// Closer is what the close of the group asks of the OS, once COMMAND has
// ended and something of the group is left.
type Closer interface {
	// Left reports whether anything of the group is left.
	Left() bool
	// Ask asks what is left to stop, the processes not asked yet (SIGTERM
	// to each new member on Linux and macOS; Ctrl-Break, once, on
	// Windows).
	Ask()
	// Wait waits at most d for the group to empty; true: contain was told
	// to stop meanwhile, which ends the grace period.
	Wait(d time.Duration) (stop bool)
	// Kill kills what is left at once.
	Kill()
	// Log says something for -v.
	Log(format string, a ...any)
}

// Close ends what is left of the group: asked to stop, then given the
// grace period (each round asks what appeared since), then killed, again
// until nothing is left. A request to stop ends the grace period at once;
// a grace period of 0 kills at once.
func Close(grace time.Duration, c Closer, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	if grace > 0 {
		deadline := now().Add(grace)
		b := proc.NewBackoff()
		for {
			c.Ask()
			if !c.Left() {
				return
			}
			left := deadline.Sub(now())
			if left <= 0 {
				c.Log("still running after the grace period of %v", grace)
				break
			}
			if c.Wait(min(b.Next(), left)) {
				break
			}
		}
	}
	b := proc.NewBackoff()
	for c.Left() {
		c.Kill()
		c.Wait(b.Next())
	}
}
