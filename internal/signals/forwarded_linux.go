package signals

import (
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals contain passes on to the whole group: every
// signal whose default action ends a process, as GNU timeout 9.10 lists
// them, the real-time ones, and WINCH and CONT. SIGALRM among them means
// "time out now".
//
// Subscribing costs the Go runtime a round trip between two threads per
// signal, the slowest step of contain run's set-up, so only the signals
// that people and programs send, and those the runtime would die of, are
// subscribed before COMMAND starts (ForwardedFirst); the rest
// (ForwardedLater), which a Go program ignores until it subscribes, are
// subscribed once COMMAND runs, beside the main loop. A signal among them
// that comes in the first moments is lost, not fatal. (contain's own main
// on amd64 catches them all at once before COMMAND starts, with package
// sigcatch, which costs no round trip: none is lost there.)
//
// Left out, because the Go runtime keeps them: SIGPROF (its profiler), and
// signals 32 to 34 (glibc's and musl's own; 34 is SIGRTMIN as glibc and GNU
// timeout number it). Sent to contain, 34 ends it; the crash guard then
// ends the group.
var (
	ForwardedFirst = append(slices.Clone(unixFirst), unix.SIGSTKFLT)
	ForwardedLater = laterSignals()
)

// laterSignals are WINCH and CONT, ignored by default (they come first:
// the guard does not ignore them), and the terminating signals that
// people and programs seldom send.
func laterSignals() []os.Signal {
	sigs := append(slices.Clone(unixLater), unix.SIGPOLL, unix.SIGPWR)
	for s := RTMin + 1; s <= RTMax; s++ {
		sigs = append(sigs, syscall.Signal(s))
	}
	return sigs
}
