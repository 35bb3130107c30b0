//go:build linux || darwin || windows

package tests

// contain run --events, end to end: what every OS's tests read of the
// lines (events_unix_test.go, events_linux_test.go, win_events_test.go
// run contain).

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// evLine is one line of contain run --events, every kind's fields
// together (docs/REPORT.md, The events).
type evLine struct {
	V                int      `json:"v"`
	Kind             string   `json:"kind"`
	Time             string   `json:"time"`
	Tag              string   `json:"tag"`
	PID              int      `json:"pid"`
	PPID             int      `json:"ppid"`
	Comm             string   `json:"comm"`
	Command          []string `json:"command"`
	Layers           []string `json:"layers"`
	ContainPID       int      `json:"contain_pid"`
	FoundBy          string   `json:"found_by"`
	LeftProcessGroup bool     `json:"left_process_group"`
	LeftSession      *bool    `json:"left_session"`
	Reparented       bool     `json:"reparented"`
	Why              string   `json:"why"`
	Signal           string   `json:"signal"`
	To               string   `json:"to"`
	Group            int      `json:"group"`
	EndedBy          string   `json:"ended_by"`
	Limit            string   `json:"limit"`
	Unit             string   `json:"unit"`
	EnforcedBy       string   `json:"enforced_by"`
	Action           string   `json:"action"`
	Status           *int     `json:"status"`
	ExitCode         *int     `json:"exit_code"`
	TimedOut         bool     `json:"timed_out"`
	ToldToStop       string   `json:"told_to_stop"`
	Leftovers        *int     `json:"leftovers"`
	Count            int      `json:"count"`
}

// evKinds are the kinds of line the schema has.
var evKinds = []string{"started", "joined", "daemon", "limit", "signal", "leftover", "end", "dropped"}

// parseEvents reads the complete lines of b (a last line without its
// newline is still being written, and left out) and fails the test
// unless each is a JSON object of version 1, of a known kind, stamped in
// RFC 3339 (UTC), all of one session's tag.
func parseEvents(t *testing.T, b []byte) []evLine {
	t.Helper()
	text := string(b)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		return nil
	}
	var out []evLine
	for _, raw := range strings.Split(text, "\n") {
		var l evLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("a line that is not JSON (%v): %q", err, raw)
		}
		if l.V != 1 || !slices.Contains(evKinds, l.Kind) {
			t.Fatalf("a line of version %d, kind %q: %s", l.V, l.Kind, raw)
		}
		if at, err := time.Parse(time.RFC3339Nano, l.Time); err != nil || at.Location() != time.UTC || at.IsZero() {
			t.Fatalf("a line stamped %q (%v): %s", l.Time, err, raw)
		}
		if !strings.HasPrefix(l.Tag, "CONTAIN:") || len(out) > 0 && l.Tag != out[0].Tag {
			t.Fatalf("a line tagged %q (the first: %q): %s", l.Tag, func() string {
				if len(out) > 0 {
					return out[0].Tag
				}
				return ""
			}(), raw)
		}
		out = append(out, l)
	}
	return out
}

// wholeRun checks the lines of a whole run: started first, end last and
// once, and returns the end.
func wholeRun(t *testing.T, lines []evLine) evLine {
	t.Helper()
	if len(lines) < 2 || lines[0].Kind != "started" || lines[len(lines)-1].Kind != "end" {
		t.Fatalf("a run's lines do not go from started to end: %+v", lines)
	}
	ends := 0
	for _, l := range lines {
		if l.Kind == "end" {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d end lines: %+v", ends, lines)
	}
	e := lines[len(lines)-1]
	if e.Status == nil || e.Leftovers == nil || e.Why == "" {
		t.Fatalf("an end without its status, leftovers or why: %+v", e)
	}
	return e
}

// readEvents reads and checks the events file of a whole run.
func readEvents(t *testing.T, path string) []evLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no events file: %v", err)
	}
	lines := parseEvents(t, b)
	wholeRun(t, lines)
	return lines
}

// findEvent is the first line that f takes (ok false: none).
func findEvent(lines []evLine, f func(evLine) bool) (evLine, bool) {
	if i := slices.IndexFunc(lines, f); i >= 0 {
		return lines[i], true
	}
	return evLine{}, false
}
