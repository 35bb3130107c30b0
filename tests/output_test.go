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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestEmptyOriginatorEnvIsUnset (item 13): CONTAIN_ORIGINATOR= is as if it
// were not set: contain run uses the default, CONTAIN.
func TestEmptyOriginatorEnvIsUnset(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{env: []string{"CONTAIN_ORIGINATOR="}}, "run", "--", "sh", "-c", `echo "$RUNNING_PROCESS_ORIGINATOR"`)
	wantCode(t, res, 0)
	if want := fmt.Sprintf("CONTAIN:%d\n", res.pid); res.stdout != want {
		t.Errorf("the tag is %q, want %q (stderr %q)", res.stdout, want, res.stderr)
	}
	// A value still counts, and -o still wins over it.
	res = run(t, runOpts{env: []string{"CONTAIN_ORIGINATOR=FROMENV"}}, "run", "--", "sh", "-c", `echo "$RUNNING_PROCESS_ORIGINATOR"`)
	if want := fmt.Sprintf("FROMENV:%d\n", res.pid); res.stdout != want {
		t.Errorf("the tag is %q, want %q (stderr %q)", res.stdout, want, res.stderr)
	}
	res = run(t, runOpts{env: []string{"CONTAIN_ORIGINATOR="}}, "run", "-o", "X", "--", "sh", "-c", `echo "$RUNNING_PROCESS_ORIGINATOR"`)
	if want := fmt.Sprintf("X:%d\n", res.pid); res.stdout != want {
		t.Errorf("the tag is %q, want %q (stderr %q)", res.stdout, want, res.stderr)
	}
}

// TestErrorsNameTheOptionAsTyped (item 13): a bad option is named as it was
// typed, with a pointer to --help, on both paths of contain run (its fast
// path and urfave/cli's) and for every other command; non-ASCII is printed
// as characters.
func TestErrorsNameTheOptionAsTyped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--bogus", "--", "true"}, 125, "contain: run: unknown option --bogus (see contain run --help)"},
		{[]string{"run", "-bogus", "--", "true"}, 125, "contain: run: unknown option -bogus (see contain run --help)"},
		{[]string{"run", "--bogus=1", "--", "true"}, 125, "contain: run: unknown option --bogus (see contain run --help)"},
		{[]string{"run", "--timeout"}, 125, "contain: run: option --timeout needs a value (see contain run --help)"},
		// -h first: the fast path hands over to urfave/cli, which finds --bogus.
		{[]string{"run", "-h", "--bogus"}, 125, "contain: run: unknown option --bogus (see contain run --help)"},
		{[]string{"run", "--über", "--", "true"}, 125, "contain: run: unknown option --über (see contain run --help)"},
		{[]string{"ps", "--bogus"}, 2, "contain: ps: unknown option --bogus (see contain ps --help)"},
		{[]string{"ps", "-x"}, 2, "contain: ps: unknown option -x (see contain ps --help)"},
		{[]string{"reap", "--bogus"}, 2, "contain: reap: unknown option --bogus (see contain reap --help)"},
		{[]string{"reap", "--format"}, 2, "contain: reap: option --format needs a value (see contain reap --help)"},
		{[]string{"completion", "--bogus"}, 2, "contain: completion: unknown option --bogus (see contain completion --help)"},
		{[]string{"--bogus"}, 2, "contain: unknown option --bogus (see contain --help)"},
		{[]string{"run", "-o", "ünï", "--", "true"}, 125, `contain: run: --originator: invalid originator name: "ünï" has "ü" (allowed: A-Z a-z 0-9 _ . -)`},
	} {
		res := run(t, runOpts{}, c.args...)
		if res.code != c.code || res.stderr != c.want+"\n" || res.stdout != "" {
			t.Errorf("contain %q: status %d, stderr %q, stdout %q; want %d and %q", c.args, res.code, res.stderr, res.stdout, c.code, c.want)
		}
	}
}

// TestOriginatorFilterCheckedAlike (item 13): ps -o and reap -o accept and
// refuse the same TOOLs: any TOOL a tag can carry (another tool's, with a
// ',' or non-ASCII letters), never an empty one or one with a space.
func TestOriginatorFilterCheckedAlike(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	// A TOOL with ':' is refused too, as contain run refuses it: TOOL:PID
	// is a session, which -o would quietly match nothing with (issue 39).
	for _, bad := range []string{"", " ", tool + " x", "\t" + tool, tool + "\n", tool + ":a", tool + ":12"} {
		for _, cmd := range [][]string{{"ps"}, {"reap", "-n"}} {
			args := append(cmd, "-o", bad)
			res := run(t, runOpts{}, args...)
			if res.code != 2 || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "contain: "+cmd[0]+": --originator: ") || res.stdout != "" {
				t.Errorf("contain %q: status %d, stderr %q; want 2 and one line", args, res.code, res.stderr)
			}
		}
	}
	for _, good := range []string{tool + ",x", tool + "ü", tool + "$(x)"} {
		for _, cmd := range [][]string{{"ps"}, {"reap", "-n"}} {
			args := append(cmd, "-o", good)
			if res := run(t, runOpts{}, args...); res.code != 0 {
				t.Errorf("contain %q: status %d, stderr %q; want 0", args, res.code, res.stderr)
			}
		}
	}
}

// TestPsSaysNothingMatched (item 13): ps -o X with no match says that
// nothing matched the filter, and exits 0.
func TestPsSaysNothingMatched(t *testing.T) {
	t.Parallel()
	tool := uniqueTool(t)
	res := run(t, runOpts{}, "ps", "-o", tool)
	wantCode(t, res, 0)
	if !strings.HasPrefix(res.stdout, "no session matches -o "+tool+": ") || strings.Count(res.stdout, "\n") != 1 {
		t.Errorf("stdout %q", res.stdout)
	}
	res = run(t, runOpts{}, "ps", "-o", tool, "--orphans", "--format", "json")
	wantCode(t, res, 0)
	if out := decode[psOutput](t, res); len(out.Sessions) != 0 {
		t.Errorf("JSON: %+v", out.Sessions)
	}
}
