package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestOf: an Error's status, its error printed as one line; an Error
// wrapped in another error still sets the status; any other error is 2.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		line string
	}{
		{nil, 0, ""},
		{&Error{Code: 1}, 1, ""},
		{&Error{Code: TimedOut, Err: errors.New("still running")}, 124, "contain: still running\n"},
		{fmt.Errorf("ps: %w", &Error{Code: Failed, Err: errors.New("bad")}), 125, "contain: bad\n"},
		{errors.New("plain"), 2, "contain: plain\n"},
	} {
		var b strings.Builder
		if code := Of(tc.err, &b); code != tc.code || b.String() != tc.line {
			t.Errorf("Of(%v) = %d, printed %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.line)
		}
	}
}
