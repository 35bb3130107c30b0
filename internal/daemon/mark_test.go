package daemon

import "testing"

// TestMark: the mark of an environment, as a block and as entries, with
// the same digest for the same environment, and a different one for
// another.
func TestMark(t *testing.T) {
	for _, c := range []struct {
		env    []string
		marked bool
	}{
		{nil, false},
		{[]string{"A=1", "RUNNING_PROCESS_IS_DAEMON=1"}, true},
		{[]string{"RUNNING_PROCESS_IS_DAEMON=0"}, false},
		{[]string{"RUNNING_PROCESS_IS_DAEMON="}, false},
		{[]string{"XRUNNING_PROCESS_IS_DAEMON=1"}, false},
		{[]string{"RUNNING_PROCESS_IS_DAEMON=0", "RUNNING_PROCESS_IS_DAEMON=1"}, true},
	} {
		var block []byte
		for _, kv := range c.env {
			block = append(append(block, kv...), 0)
		}
		m, b := MarkOfEnv(c.env), MarkOfEnviron(block)
		if m != b {
			t.Errorf("%q: %+v as entries, %+v as a block", c.env, m, b)
		}
		if m.Daemon != c.marked {
			t.Errorf("%q: marked %t, want %t", c.env, m.Daemon, c.marked)
		}
	}
	if MarkOfEnv([]string{"A=1"}).Digest == MarkOfEnv([]string{"A=2"}).Digest {
		t.Error("two environments, one digest")
	}
	if !Marked([]string{"A=1", "RUNNING_PROCESS_IS_DAEMON=1"}) || Marked([]string{"RUNNING_PROCESS_IS_DAEMON=0"}) || Marked(nil) {
		t.Error("Marked reads the mark wrong")
	}
}
