// Package status is how every contain command ends: an error that
// carries the exit status, printed as one line, and the statuses contain
// run shares with GNU timeout.
package status

import (
	"errors"
	"fmt"
	"io"

	"github.com/contain-cli/contain/internal/text"
)

// The exit statuses of contain run, as GNU timeout's; contain stop and
// contain wait use TimedOut for their own timeout.
const (
	TimedOut   = 124
	Failed     = 125
	CannotExec = 126
	NotFound   = 127
)

// Error carries the exit status contain wants; Err, if set, is printed
// as "contain: Err".
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Of prints err, if any, as one line on stderr and returns the exit
// status: an Error's, else 2.
func Of(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *Error
	if errors.As(err, &ee) {
		if ee.Err != nil {
			text.Fprintf(stderr, "contain: %v\n", ee.Err)
		}
		return ee.Code
	}
	text.Fprintf(stderr, "contain: %v\n", err)
	return 2
}
