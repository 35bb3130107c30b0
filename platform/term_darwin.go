package platform

import (
	"os/signal"

	"golang.org/x/sys/unix"
)

// setForeground makes pgrp the terminal's foreground group. A process
// outside the foreground that calls tcsetpgrp gets SIGTTOU (and would
// stop) unless it ignores or blocks it. x/sys has no per-thread signal
// mask for macOS, so contain ignores SIGTTOU for the moment of the call;
// it starts no process meanwhile (COMMAND is running), so none inherits
// the ignored signal.
func (t *terminal) setForeground(pgrp int) error {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp)
}
