//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestPsTableEscapesAndShortens (issue 9, item 10): a tag with C1 controls
// (CSI U+009B, NEL U+0085) is escaped in ps's and reap's tables, and a 64
// KB tag does not widen every row; the JSON keeps both whole.
func TestPsTableEscapesAndShortens(t *testing.T) {
	tool := uniqueTool(t)
	c1Tool := tool + "\u009b2J\u0085x"
	c1Value := fmt.Sprintf("%s:%d", c1Tool, deadPID(t))
	hugeTool := tool + strings.Repeat("A", 64<<10)
	hugeValue := fmt.Sprintf("%s:%d", hugeTool, deadPID(t))
	plainValue := fmt.Sprintf("%s:%d", tool, deadPID(t))
	c1 := startTagged(t, c1Value, procOpts{})
	huge := startTagged(t, hugeValue, procOpts{})
	startTagged(t, plainValue, procOpts{})
	filter := []string{"-o", tool, "-o", c1Tool, "-o", hugeTool}

	res := run(t, runOpts{}, append([]string{"ps"}, filter...)...)
	wantCode(t, res, 0)
	checkTable := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\u009b\u0085") || !utf8.ValidString(out) {
			t.Errorf("%s: a C1 control is printed raw:\n%q", what, out)
		}
		if !strings.Contains(out, tool+`\u009b2J\u0085x:`) {
			t.Errorf("%s: the C1 tag is not shown escaped:\n%q", what, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if len(line) > 300 {
				t.Errorf("%s: a row is %d bytes wide: %.200q...", what, len(line), line)
			}
		}
	}
	checkTable("ps", res.stdout)
	if !strings.Contains(res.stdout, fmt.Sprint(c1)) || !strings.Contains(res.stdout, fmt.Sprint(huge)) {
		t.Errorf("ps does not list the processes %d and %d:\n%.2000s", c1, huge, res.stdout)
	}

	out := decode[psOutput](t, run(t, runOpts{}, append([]string{"ps", "--format", "json"}, filter...)...))
	if state, pids := sessionState(out, hugeValue); state != "orphaned" || len(pids) != 1 {
		t.Errorf("JSON: the 64 KB tag is not kept whole (%s %v)", state, pids)
	}
	if state, pids := sessionState(out, c1Value); state != "orphaned" || len(pids) != 1 {
		t.Errorf("JSON: the C1 tag is not kept as it is (%s %v)", state, pids)
	}

	res = run(t, runOpts{}, append([]string{"reap", "--dry-run"}, filter...)...)
	wantCode(t, res, 0)
	checkTable("reap", res.stdout)
}

// TestCommaInToolAndNoTrimming (item 11): -o and --session take one value
// each, never split at commas, so a TOOL with a ',' can be named; a value
// with leading or trailing spaces is refused (status 2), not trimmed.
func TestCommaInToolAndNoTrimming(t *testing.T) {
	tool := uniqueTool(t)
	commaTool := "A," + tool
	value := fmt.Sprintf("%s:%d", commaTool, deadPID(t))
	other := fmt.Sprintf("%s:%d", tool, deadPID(t))
	pid := startTagged(t, value, procOpts{})
	bystander := startTagged(t, other, procOpts{})

	out := decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json", "-o", commaTool))
	if state, pids := sessionState(out, value); state != "orphaned" || len(pids) != 1 || pids[0] != pid || len(out.Sessions) != 1 {
		t.Errorf("ps -o %q: %+v", commaTool, out.Sessions)
	}
	// Two forms of the option mix; neither value is split.
	out = decode[psOutput](t, run(t, runOpts{}, "ps", "--format", "json", "--originator", commaTool, "-o", tool))
	if len(out.Sessions) != 2 {
		t.Errorf("ps -o %q -o %q: %+v", commaTool, tool, out.Sessions)
	}

	for _, args := range [][]string{
		{"ps", "-o", " " + tool},
		{"ps", "-o", tool + " "},
		{"reap", "-o", " " + tool},
		{"reap", "--originator", tool + "\t"},
		{"reap", "--session", " " + other},
		{"reap", "--session", other + " "},
	} {
		res := run(t, runOpts{}, args...)
		if res.code != 2 || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "contain: ") {
			t.Errorf("contain %q: status %d, stderr %q; want 2 and one line", args, res.code, res.stderr)
		}
	}
	if !alive(bystander) {
		t.Fatal("a refused reap killed the session it named")
	}

	res := run(t, runOpts{}, "reap", "--format", "json", "--session", value, "-g", "300ms")
	wantCode(t, res, 0)
	if got := results(decode[reapOutput](t, res)); got[pid] != "ended after the first signal" || len(got) != 1 {
		t.Errorf("reap --session %q: %v", value, got)
	}
	waitFor(t, "the session to end", time.Second, func() bool { return !alive(pid) })
	if !alive(bystander) {
		t.Error("reap --session killed another session")
	}
}

// reapRow is a process of reap's JSON report, with the fields item 12 is
// about.
type reapRow struct {
	PID     int    `json:"pid"`
	Skipped bool   `json:"skipped"`
	Result  string `json:"result"`
	Alive   bool   `json:"alive"`
	Failed  bool   `json:"failed"`
}

type reapRows struct {
	DryRun    bool      `json:"dry_run"`
	Processes []reapRow `json:"processes"`
}

// TestReapJSONAliveIsTheTruth (item 12): "alive" in reap's JSON says that
// the process runs: true for a dry run's processes and for a spared
// ancestor, false for one reap ended; "failed" is reap's failure.
func TestReapJSONAliveIsTheTruth(t *testing.T) {
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	pid := startTagged(t, value, procOpts{})

	dry := decode[reapRows](t, run(t, runOpts{}, "reap", "-n", "--format", "json", "-o", tool))
	if !dry.DryRun || len(dry.Processes) != 1 || dry.Processes[0].PID != pid || !dry.Processes[0].Alive || dry.Processes[0].Failed || dry.Processes[0].Skipped {
		t.Errorf("dry run: %+v, want %d alive, not failed, not skipped", dry, pid)
	}
	if !alive(pid) {
		t.Fatal("the dry run killed it")
	}

	// An orphaned session that holds reap's own parent: the parent is
	// spared, and alive.
	dir := t.TempDir()
	script := fmt.Sprintf(`%s reap -o %s --format json -g 300ms > %s/out; echo $? > %s/code; exec sleep 300`, bin, tool, dir, dir)
	sh := startTagged(t, value, procOpts{}, "sh", "-c", script)
	waitFor(t, "reap to run", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "code"))
		return len(b) > 0
	})
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	var rep reapRows
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %q: %v", b, err)
	}
	rows := map[int]reapRow{}
	for _, p := range rep.Processes {
		rows[p.PID] = p
	}
	if r := rows[sh]; !r.Skipped || !r.Alive || r.Failed || !alive(sh) {
		t.Errorf("the spared ancestor %d: %+v (alive: %v)\n%s", sh, r, alive(sh), b)
	}
	if r := rows[pid]; r.Skipped || r.Alive || r.Failed || alive(pid) {
		t.Errorf("the reaped process %d: %+v (alive: %v)\n%s", pid, r, alive(pid), b)
	}
}
