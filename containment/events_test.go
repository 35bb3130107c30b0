//go:build linux || darwin

package containment_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/containment"
)

// TestEvents: Options.Events takes the session's events as contain run
// --events writes them, while the session runs: the started line is read
// from a pipe before the Group is closed; once Close returns, the close's
// signal to the escapee and its end as a leftover, and the end, are
// written, each a JSON object of version 1 with the session's tag.
func TestEvents(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := containment.NewGroup(containment.Options{Originator: "EVTEST", Grace: 5 * time.Second, Events: w})
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		V       int    `json:"v"`
		Kind    string `json:"kind"`
		Time    string `json:"time"`
		Tag     string `json:"tag"`
		PID     int    `json:"pid"`
		To      string `json:"to"`
		EndedBy string `json:"ended_by"`
		Why     string `json:"why"`
	}
	lines := make(chan line, 100)
	bad := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.V != 1 || l.Kind == "" || l.Time == "" || !strings.HasPrefix(l.Tag, "EVTEST:") {
				bad <- sc.Text()
				continue
			}
			lines <- l
		}
	}()
	dir := t.TempDir()
	// The escapee writes its PID once it is in a session of its own, and
	// COMMAND waits for that: on a busy machine a child that has not yet
	// called setsid is still in COMMAND's process group, which Wait ends.
	cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'echo $$ > "$0.new"; mv "$0.new" "$0"; exec sleep 300' "$0" &
while [ ! -s "$0" ]; do sleep 0.01; done; exit 0`, dir+"/escapee")
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	escapee := readNumber(t, dir+"/escapee")
	defer syscallKill(escapee)
	var got []line
	deadline := time.After(30 * time.Second)
	for !slices.ContainsFunc(got, func(l line) bool { return l.Kind == "started" }) {
		select {
		case l := <-lines:
			got = append(got, l)
		case b := <-bad:
			t.Fatalf("a line that is not an event of version 1 with the session's tag: %s", b)
		case <-deadline:
			t.Fatalf("no started line while the session runs: %+v", got)
		}
	}
	if err := g.Wait(cmd); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close() // Close has written every line: the reader ends
	for l := range lines {
		got = append(got, l)
	}
	select {
	case b := <-bad:
		t.Fatalf("a line that is not an event of version 1 with the session's tag: %s", b)
	default:
	}
	has := func(f func(l line) bool) bool { return slices.ContainsFunc(got, f) }
	if !has(func(l line) bool { return l.Kind == "signal" && l.PID == escapee && l.Why == "after COMMAND ended" }) {
		t.Errorf("no signal line for the escapee %d: %+v", escapee, got)
	}
	if !has(func(l line) bool {
		return l.Kind == "leftover" && l.PID == escapee && strings.HasPrefix(l.EndedBy, "SIGTERM")
	}) {
		t.Errorf("no leftover line for the escapee %d ended by SIGTERM: %+v", escapee, got)
	}
	if last := got[len(got)-1]; last.Kind != "end" || last.Tag != got[0].Tag {
		t.Errorf("the last line is %+v, want the session's end", last)
	}
}

// readNumber waits, 30 s at most, for path to hold a number and a
// newline, and returns it.
func readNumber(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && strings.HasSuffix(string(b), "\n") {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held a number: %q", path, b)
		}
	}
}

// syscallKill ends pid, should the test fail with it alive.
func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
