package nosigpipe

import "io"

// FD writes to this process's file descriptor fd (contain run --events
// fd:N, one it inherited) as Stderr writes to 2: with write(2) itself
// (package os would make up a SIGPIPE for 1 and 2, and the kernel's is
// dropped by the Go runtime on macOS). Nothing is changed of the
// descriptor, which others may share.
func FD(fd int) io.Writer { return fdWriter(fd) }
