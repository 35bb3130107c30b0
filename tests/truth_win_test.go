//go:build windows

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWinTruthTimeoutEnded: on a timeout the report lists what contain
// ended, by name, in the phase "timeout": COMMAND, its start /b child and
// its detached grandchild, ended by CTRL_BREAK_EVENT or, where the event
// cannot be delivered (Wine), TerminateJobObject; -v names each process
// the job's termination ends.
func TestWinTruthTimeoutEnded(t *testing.T) {
	t.Parallel()
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "report.json")
	wait, command, startb, detached := runTree(t, dir, "run", "-v", "-t", "5", "-g", "1s", "--report", path, "--", self(t), "stay")
	res := wait()
	wantCode(t, res, 124)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Ended *[]struct {
			PID     int    `json:"pid"`
			Comm    string `json:"comm"`
			Command bool   `json:"command"`
			Phase   string `json:"phase"`
			Signal  string `json:"signal"`
			EndedBy string `json:"ended_by"`
		} `json:"ended_by_contain"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Ended == nil {
		t.Fatalf("no ended_by_contain (%v):\n%s", err, b)
	}
	name := filepath.Base(self(t))
	for what, rec := range map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached} {
		found := false
		for _, e := range *r.Ended {
			if e.PID != rec.pid {
				continue
			}
			found = true
			if !strings.EqualFold(e.Comm, name) || e.Command != (what == "COMMAND") || e.Phase != "timeout" ||
				e.Signal != "CTRL_BREAK_EVENT" && e.Signal != "TerminateJobObject" || e.EndedBy == "" || e.EndedBy == "still running" {
				t.Errorf("%s %d: %+v", what, rec.pid, e)
			}
		}
		if !found {
			t.Errorf("%s %d is not in ended_by_contain:\n%s", what, rec.pid, b)
		}
	}
	if want := fmt.Sprintf("%d (%s)", command.pid, name); !strings.Contains(strings.ToLower(res.stderr), strings.ToLower(want)) {
		t.Errorf("-v does not name COMMAND (%s) where it ends it:\n%s", want, res.stderr)
	}
}
