package nosigpipe

import "io"

// FD writes to this process's file descriptor fd (contain run --events
// fd:N, one it inherited) as Stderr writes to 2: with write(2), SIGPIPE
// blocked on the writing thread. Nothing is changed of the descriptor,
// which others may share (no O_NONBLOCK cleared, as os.File.Fd would).
func FD(fd int) io.Writer { return pipeSafe(fd) }
