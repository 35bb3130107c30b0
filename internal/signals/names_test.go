//go:build unix || windows

package signals

import (
	"slices"
	"testing"
)

// TestNames: completion offers only what Parse takes, and the signals every
// OS has.
func TestNames(t *testing.T) {
	names := Names()
	for _, n := range names {
		if _, err := Parse(n); err != nil {
			t.Errorf("Names offers %q, which Parse refuses: %v", n, err)
		}
	}
	for _, want := range []string{"INT", "KILL", "TERM"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() = %q, without %s", names, want)
		}
	}
}
