//go:build linux || darwin

package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEventsLive: --events fd:N writes to a descriptor contain inherited
// (here a pipe, ExtraFiles), each line as it happens: the started line is
// read from the pipe while COMMAND still sleeps, before anything is done
// to the run; then contain is told to stop (SIGTERM), and the signal
// line (told to stop) and the end follow on the same pipe.
func TestEventsLive(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(bin, "run", "--events", "fd:3", "--", "sleep", "300")
	cmd.ExtraFiles = []*os.File{w}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) evLine {
		t.Helper()
		select {
		case s, ok := <-lines:
			if !ok {
				t.Fatalf("the pipe ended before %s", what)
			}
			return parseEvents(t, []byte(s+"\n"))[0]
		case <-time.After(time.Minute):
			t.Fatalf("no line for %s within a minute", what)
		}
		return evLine{}
	}
	first := next("the started line")
	select {
	case err := <-exited:
		t.Fatalf("contain ended (%v) before the test did anything: the line was not read while it ran", err)
	default:
	}
	if first.Kind != "started" || first.PID <= 0 || first.Tag != fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid) {
		t.Fatalf("the first line: %+v", first)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	all := []evLine{first}
	for all[len(all)-1].Kind != "end" {
		all = append(all, next("the end line"))
	}
	e := wholeRun(t, all)
	if e.ToldToStop != "SIGTERM" || e.Why != "told to stop" || e.Signal != "SIGTERM" || *e.Status != 128+15 {
		t.Errorf("the end: %+v", e)
	}
	if _, ok := findEvent(all, func(l evLine) bool {
		return l.Kind == "signal" && l.PID == first.PID && l.Signal == "SIGTERM" && l.Why == "told to stop"
	}); !ok {
		t.Errorf("no SIGTERM line (told to stop) for COMMAND %d: %+v", first.PID, all)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("contain did not return")
	}
}

// TestEventsRefused: where the events cannot go, contain run says so in
// one line and exits 125 before COMMAND runs: an fd:N that is not open,
// not a number, a directory that does not exist, an empty value.
func TestEventsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, to := range []string{"fd:9", "fd:x", filepath.Join(dir, "no", "such", "events"), ""} {
		res := run(t, runOpts{}, "run", "--events="+to, "--", "touch", marker)
		wantCode(t, res, 125)
		if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: run: --events: ") {
			t.Errorf("--events=%s: stderr %q, want one line about --events", to, res.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("--events=%s: COMMAND ran", to)
		}
	}
}

// TestEventsFile: a link at the events path is replaced, never written
// through (the file it names stays as it was), as the report's; - writes
// the lines to stderr.
func TestEventsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "events")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	res := run(t, runOpts{}, "run", "--events", link, "--", "true")
	wantCode(t, res, 0)
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the link was not replaced by a file: %v %v", st, err)
	}
	if e := wholeRun(t, readEvents(t, link)); *e.Status != 0 || e.Why != "exited" {
		t.Errorf("the end: %+v", e)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "run", "--events", "-", "--", "true").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wholeRun(t, parseEvents(t, out))
}
