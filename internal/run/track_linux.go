package run

import (
	"io"
	"os"
	"syscall"
)

// selfStop is the signal contain stops itself with when COMMAND stopped.
func selfStop(sig syscall.Signal) syscall.Signal { return sig }

// guardPipe writes to the guard without a SIGPIPE if it is gone.
func guardPipe(w *os.File) io.Writer { return pipeSafe(w.Fd()) }

// quietPipe: on Linux, guardPipe handles SIGPIPE per write.
func quietPipe(*os.File) {}
