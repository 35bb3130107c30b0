//go:build windows

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// winStopOut is the part of `contain stop --format json` these tests read.
type winStopOut struct {
	Sessions []struct {
		Originator struct{ Value string }
		Result     string
	}
	Processes []struct {
		PID    int
		Result string
	}
}

// TestWinStopSession: contain stop asks a contain run through its stop
// event; the run closes its job, `start /b` child and detached grandchild
// included, and stop returns once all of it and the run have ended.
func TestWinStopSession(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	wait, command, startb, detached := runTree(t, dir, "run", "-v", "-g", "1s", "--", self(t), "stay")
	value := command.tag
	res := run(t, runOpts{}, "stop", "--format", "json", value)
	wantCode(t, res, 0)
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
	var out winStopOut
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(out.Sessions) != 1 || out.Sessions[0].Originator.Value != value || !strings.HasSuffix(out.Sessions[0].Result, "; ended") {
		t.Errorf("sessions: %+v", out.Sessions)
	}
	ended := 0
	for _, p := range out.Processes {
		if p.Result == "ended" {
			ended++
		}
	}
	if ended < 3 {
		t.Errorf("the report says %d processes ended, want COMMAND, its child and grandchild:\n%s", ended, res.stdout)
	}
	run := wait()
	if !strings.Contains(run.stderr, "told to stop by contain stop") {
		t.Errorf("contain run -v does not say contain stop told it to stop:\n%s", run.stderr)
	}
}

// TestWinStopKill: -s KILL terminates the originator through its handle,
// and its job goes with it.
func TestWinStopKill(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	wait, command, startb, detached := runTree(t, dir, "run", "--", self(t), "stay")
	res := run(t, runOpts{}, "stop", "-s", "KILL", command.tag)
	wantCode(t, res, 0)
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
	if r := wait(); r.code != 1 {
		t.Errorf("contain run exited %d, want 1 (TerminateProcess's code)", r.code)
	}
}

// TestWinStopOtherTool: a session of another tool has no stop event, so
// Windows has no way to ask its originator: stop refuses it in one line
// that names -s KILL, and touches nothing. -s KILL with -t and --kill
// terminates the originator, then the member, as reap would.
func TestWinStopOtherTool(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	originator := startRecorded(t, dir, "sleep", "originator")
	value := fmt.Sprintf("W%dOTHER:%d", os.Getpid(), originator.pid)
	member := startRecorded(t, dir, "sleep", "member", "RUNNING_PROCESS_ORIGINATOR="+value)
	res := run(t, runOpts{}, "stop", "-t", "5", value)
	wantCode(t, res, 1)
	if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ") || !strings.Contains(lines[0], "-s KILL") {
		t.Errorf("stderr:\n%s", res.stderr)
	}
	if originator.gone() || member.gone() {
		t.Fatal("a refused session was touched")
	}
	res = run(t, runOpts{}, "stop", "-s", "KILL", "-t", "1", "--kill", value)
	wantCode(t, res, 0)
	if !originator.goneWithin(10*time.Second) || !member.goneWithin(10*time.Second) {
		t.Errorf("after -s KILL --kill: originator gone %v, member gone %v\n%s", originator.gone(), member.gone(), res.stdout)
	}
}

// TestWinWait: wait returns once the session has ended, not before; -t
// gives up with 124 while it runs.
func TestWinWait(t *testing.T) {
	needContain(t)
	dir := tmpDir(t)
	runWait, command, startb, detached := runTree(t, dir, "run", "-g", "1s", "--", self(t), "exit")
	res := run(t, runOpts{}, "wait", "-t", "1", command.tag)
	wantCode(t, res, 124)
	if command.gone() {
		t.Fatal("the session ended: wait -t proved nothing")
	}
	cmd := containCmd(runOpts{}, "wait", "--format", "json", command.tag)
	stdout, stderr := new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = stdout, stderr, 5*time.Second
	if err := startCmd(t, cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case err := <-done:
		t.Fatalf("wait returned while the session ran: %v\n%s%s", err, stdout, stderr)
	case <-time.After(2 * time.Second):
	}
	os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait: %v\n%s%s", err, stdout, stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("wait did not return within a minute of the session's end")
	}
	wantAllGone(t, 0, map[string]recorded{"COMMAND": command, "start /b child": startb, "detached grandchild": detached})
	if !strings.Contains(stdout.String(), `"result":"ended"`) {
		t.Errorf("wait's report: %s", stdout)
	}
	wantCode(t, runWait(), 7)
}
