package signals

import (
	"slices"

	"golang.org/x/sys/unix"
)

// forwarded are the signals contain passes on to the whole group, as on
// Linux (see forwarded_linux.go): every signal whose default action ends a
// process, WINCH and CONT, and SIGINFO (Ctrl-T), which asks a program for
// its status. SIGALRM among them means "time out now".
var (
	ForwardedFirst = append(slices.Clone(unixFirst), unix.SIGEMT)
	ForwardedLater = append(slices.Clone(unixLater), unix.SIGINFO)
)
