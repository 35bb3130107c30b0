package run

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// ExitBySignal ends contain with sig, as COMMAND ended, for the signals
// the Go runtime itself dies of once no one is notified: HUP, INT and
// TERM (it then restores the default action and raises the signal again).
// For any other signal the runtime would ignore it or print a stack trace,
// and x/sys has no raw sigaction for macOS to get round that; nor for one
// of the three that was ignored when contain started (signal.Reset would
// restore the ignoring): contain exits with 128+N instead, at once (the
// caller's fallback; macExitable).
func ExitBySignal(sig syscall.Signal) error {
	if err := macExitable(sig, signal.Ignored(sig)); err != nil {
		return fmt.Errorf("exit by %s on macOS: %w", signals.Name(sig), err)
	}
	signal.Reset(sig)
	if err := unix.Kill(os.Getpid(), sig); err != nil {
		return err
	}
	time.Sleep(time.Second) // the signal is on its way
	return fmt.Errorf("still alive after %s", signals.Name(sig))
}
