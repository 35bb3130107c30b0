//go:build linux || darwin

package signals

import (
	"os"
	"os/signal"
	"slices"

	"golang.org/x/sys/unix"
)

// unixFirst and unixLater are the forwarded signals Linux and macOS share
// (see forwarded_linux.go for why some come first); each OS adds its own.
// WINCH and CONT come first among the later ones: the guard does not
// ignore them.
var (
	unixFirst = []os.Signal{unix.SIGALRM, unix.SIGINT, unix.SIGQUIT, unix.SIGHUP, unix.SIGTERM,
		unix.SIGPIPE, unix.SIGUSR1, unix.SIGUSR2, unix.SIGABRT,
		// Without a round trip: the runtime handles these itself.
		unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSYS}
	unixLater = []os.Signal{unix.SIGWINCH, unix.SIGCONT, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM}
)

// RuntimeOwn reports whether the Go runtime needs s for itself (a fault,
// a trap): a forwarded signal of these can be subscribed only through
// os/signal, which costs no round trip for them.
func RuntimeOwn(s os.Signal) bool {
	switch s {
	case unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSYS:
		return true
	}
	return false
}

// Fatal are the forwarded signals whose default action ends a process:
// all but WINCH and CONT, the first two of ForwardedLater. The crash guard
// and the shim ignore them, so that nothing but SIGKILL ends them halfway
// (a signal forwarded by an outer contain run included).
func Fatal() []os.Signal { return append(slices.Clone(ForwardedFirst), ForwardedLater[2:]...) }

// NotIgnored drops the signals contain was started with ignored: nohup
// ignores HUP, a shell without job control ignores INT (and QUIT) in its
// background jobs, and COMMAND inherits that, as it would without contain.
// (Go reports an inherited SIG_IGN for HUP and INT only: for every other
// signal it installs its own handler at start-up, and what was there
// before is lost to contain and to COMMAND.)
func NotIgnored(sigs []os.Signal) []os.Signal {
	var out []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}
