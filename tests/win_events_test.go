//go:build windows

package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWinEvents: contain run --events on Windows: COMMAND started in its
// job, what the close sent what COMMAND left (its `start /b` child and
// its detached grandchild: Ctrl-Break to COMMAND's console process
// group, or, where it cannot go — Wine — TerminateJobObject to each),
// each of them ended, and the end with COMMAND's exit status, each line a
// JSON object of version 1 with the session's tag.
func TestWinEvents(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	path := filepath.Join(dir, "events.jsonl")
	wait, command, startb, detached := runTree(t, dir, "run", "-g", "1s", "--events", path, "--", self(t), "exit")
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	res := wait()
	wantCode(t, res, 7)
	lines := readEvents(t, path)
	if b, err := os.ReadFile(path); err == nil {
		t.Logf("the events:\n%s", b)
	}
	if s := lines[0]; s.PID != command.pid || len(s.Layers) == 0 || s.ContainPID != res.pid {
		t.Errorf("the started line %+v; COMMAND was %d, contain %d", s, command.pid, res.pid)
	}
	if _, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "signal" && l.Why == "after COMMAND ended" }); !ok {
		t.Errorf("no signal line for the close: %+v", lines)
	}
	for name, r := range map[string]recorded{"start /b child": startb, "detached grandchild": detached} {
		if l, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "leftover" && l.PID == r.pid }); !ok || l.EndedBy == "" {
			t.Errorf("no leftover line for the %s %d: %+v", name, r.pid, lines)
		}
	}
	if e := lines[len(lines)-1]; *e.Status != 7 || e.ExitCode == nil || *e.ExitCode != 7 || e.Why != "exited" || *e.Leftovers < 2 {
		t.Errorf("the end: %+v", e)
	}
	if _, ok := findEvent(lines, func(l evLine) bool { return l.Kind == "joined" }); ok {
		t.Errorf("a joined line on Windows, which says none: %+v", lines)
	}
}
