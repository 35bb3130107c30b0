package run

import (
	"errors"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// contain on macOS dies of HUP, INT and TERM, unless the signal was
// ignored when it started (nohup): then it returns at once, without
// raising a signal that would do nothing and waiting a second for it.
func TestMacExitable(t *testing.T) {
	for _, c := range []struct {
		sig     syscall.Signal
		ignored bool
		ok      bool
	}{
		{macSIGHUP, false, true}, {macSIGINT, false, true}, {macSIGTERM, false, true},
		{macSIGHUP, true, false}, {macSIGINT, true, false},
		{syscall.Signal(3), false, false}, {syscall.Signal(9), false, false}, {syscall.Signal(30), false, false},
	} {
		err := macExitable(c.sig, c.ignored)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, proc.ErrUnsupported) {
			t.Errorf("macExitable(%d, ignored %v) = %v, want ok %v", c.sig, c.ignored, err, c.ok)
		}
	}
}
