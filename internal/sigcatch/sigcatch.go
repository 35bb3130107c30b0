// Package sigcatch catches signals for contain run without os/signal's
// cost: os/signal hands each signal it subscribes to a goroutine locked to
// a thread of its own (the runtime's sigM), a round trip between two
// threads per signal, about 26 µs each on a 2-core machine, and contain
// run forwards 46 signals that need it. Here each signal is one
// rt_sigaction: a handler of contain's own (a few instructions, no Go)
// writes the signal's number to a pipe, and a goroutine reads the pipe and
// sends the signals on a channel, as os/signal would.
//
// Only for a process that keeps the signals to the end and uses os/signal
// for none of them (contain run's own main, which exits when the run
// ends): the runtime takes the handler for its own again only through
// os/signal (Notify, Ignore, Reset), and Notify of a signal caught here
// would never deliver it. Never the signals the runtime needs for itself
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGURG, SIGPROF,
// 32-34): Catch refuses them.
//
// linux/amd64 only; elsewhere Catch returns ErrUnsupported and the caller
// subscribes with os/signal.
package sigcatch

import (
	"errors"
	"os"
)

// ErrUnsupported: no handler of contain's own for this OS and
// architecture.
var ErrUnsupported = errors.New("sigcatch: not supported on this OS and architecture")

// deliver reads signal numbers from r and sends them on c, dropping one
// when c is full, as os/signal does.
func deliver(r *os.File, c chan<- os.Signal, sig func(byte) os.Signal) {
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			select {
			case c <- sig(b):
			default:
			}
		}
		if err != nil {
			return
		}
	}
}
