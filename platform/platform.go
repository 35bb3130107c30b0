// Package platform holds everything contain does differently per OS:
// starting a command inside a kill-on-close group, forwarding signals to it,
// and closing it. Shared types live here; each OS has its own files.
package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// ErrUnsupported is returned where an OS feature is not written yet. It is
// never hidden behind a silent half-measure.
var ErrUnsupported = errors.New("not supported on this OS yet")

// Logger receives what --verbose prints; it is never nil inside Run.
type Logger func(format string, args ...any)

// RunOptions is everything `contain run` asks of the platform.
type RunOptions struct {
	Args      []string      // COMMAND and its arguments
	Env       []string      // the complete environment, tag included
	Timeout   time.Duration // 0: none
	Signal    syscall.Signal
	KillAfter time.Duration // 0: none
	Grace     time.Duration // between SIGTERM and SIGKILL when the group is closed
	Detach    bool
	Log       Logger
}

// Result tells how COMMAND ended.
type Result struct {
	Pid      int  // COMMAND's PID
	Exited   bool // COMMAND exited with Code
	Code     int
	Signaled bool // COMMAND was killed by Signal
	Signal   syscall.Signal
	TimedOut bool // the timeout fired before COMMAND ended
}

// StartError means COMMAND itself could not be started (not found, not
// executable), as opposed to contain failing to set up the group.
type StartError struct {
	Name string
	Err  error
}

func (e *StartError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // "fork/exec NAME: " says nothing the message does not
	}
	return fmt.Sprintf("cannot run %s: %v", e.Name, err)
}
func (e *StartError) Unwrap() error { return e.Err }

func nopLog(string, ...any) {}

func (o *RunOptions) logger() Logger {
	if o.Log == nil {
		return nopLog
	}
	return o.Log
}
