//go:build linux || darwin

package daemon

import (
	"os"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// TestJudge: a process whose environment is its parent's is undecided;
// one with its own, unmarked, is no daemon.
func TestJudge(t *testing.T) {
	if os.Getenv("RUNNING_PROCESS_IS_DAEMON") == "1" {
		t.Skip("the test itself is marked")
	}
	judge := Judge()
	self := proc.Entry{PID: os.Getpid()}
	if v := judge(self, &self); v != Undecided {
		t.Errorf("the same environment as its parent's: %v, want Undecided", v)
	}
	if v := judge(self, nil); v != No {
		t.Errorf("an unmarked environment of its own: %v, want No", v)
	}
}
