//go:build windows

package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// Package containment on Windows: testdata/libhost, built for Windows by
// TestWindowsUnderWine and named in CONTAIN_LIBHOST, holds this binary's
// "tree" helper (a `start /b` child and a detached grandchild) in a group.

// startWinHost starts the host with the tree helper as its group's
// command, and waits until the tree has started.
func startWinHost(t *testing.T, tool string) (host *exec.Cmd, stdin io.WriteCloser, out *bufio.Reader, tree []recorded) {
	t.Helper()
	lib := os.Getenv("CONTAIN_LIBHOST")
	if lib == "" {
		t.Skip("CONTAIN_LIBHOST is not set: these tests run under Wine, started by TestWindowsUnderWine (go test ./tests on Linux)")
	}
	dir := tmpDir(t)
	host = exec.Command(lib, tool, "--", self(t), "stay", "library")
	host.Env = append(os.Environ(), asHelper("tree", dir).env...)
	var err error
	if stdin, err = host.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr // in the Windows test binary's output
	if err := startCmd(t, host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill() })
	out = bufio.NewReader(stdout)
	for _, name := range []string{"command", "startb", "detached"} {
		tree = append(tree, readRecord(t, dir, name))
	}
	return host, stdin, out, tree
}

// TestWinLibraryGroup: Close ends the whole tree, the `start /b` child and
// the detached grandchild included, and the host's own child lives on.
func TestWinLibraryGroup(t *testing.T) {
	_, stdin, out, tree := startWinHost(t, "LIBWIN")
	var s struct {
		Copy int    `json:"copy"`
		Tag  string `json:"tag"`
	}
	line, err := out.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &s) != nil {
		t.Fatalf("the host's first line %q: %v", line, err)
	}
	for _, r := range tree {
		if r.tag != s.Tag {
			t.Errorf("process %d carries %q, want the group's %s", r.pid, r.tag, s.Tag)
		}
	}
	fmt.Fprintln(stdin, "close")
	line, err = out.ReadBytes('\n')
	var c struct {
		Reports  int  `json:"reports"`
		OwnAlive bool `json:"own_alive"`
	}
	if err != nil || json.Unmarshal(line, &c) != nil {
		t.Fatalf("the host's second line %q: %v", line, err)
	}
	for _, r := range tree {
		if !r.gone() {
			t.Errorf("process %d of the group outlived Close", r.pid)
		}
	}
	if c.Reports != 1 || !c.OwnAlive {
		t.Errorf("Close: %d report(s), the host's own child alive: %v; want 1 and true", c.Reports, c.OwnAlive)
	}
}

// TestWinLibraryHostKilled: the host terminated (TerminateProcess, the
// harshest end): its copy sees its pipe close and closes the group.
func TestWinLibraryHostKilled(t *testing.T) {
	host, _, _, tree := startWinHost(t, "LIBWINK")
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	for _, r := range tree {
		if !r.goneWithin(10 * time.Second) {
			t.Errorf("process %d of the group outlived its host by 10 s", r.pid)
		}
	}
}

// hostLine is the host's first line: the holder (copy), the session's
// tag, the command's PID.
type hostLine struct {
	Copy    int    `json:"copy"`
	Tag     string `json:"tag"`
	Command int    `json:"command"`
}

func readHostLine(t *testing.T, out *bufio.Reader) hostLine {
	t.Helper()
	var s hostLine
	line, err := out.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &s) != nil {
		t.Fatalf("the host's first line %q: %v", line, err)
	}
	return s
}

// TestWinLibraryHeld: on Windows a Group holds one session, the holder's
// job object: the command is the program's own child (cmd.Process is
// the command), tagged with the holder's PID, and no copy runs per
// command. The holder terminated (TerminateProcess) leaves the program's
// handle the job's last: the program closes it, and the job, kill on
// close, ends the tree while the program lives on.
func TestWinLibraryHeld(t *testing.T) {
	host, _, out, tree := startWinHost(t, "LIBWINH")
	s := readHostLine(t, out)
	if want := fmt.Sprintf("LIBWINH:%d", s.Copy); s.Tag != want || s.Copy == s.Command {
		t.Errorf("the host says tag %q, holder %d, command %d: want %s and a holder that is not the command", s.Tag, s.Copy, s.Command, want)
	}
	if s.Command != tree[0].pid {
		t.Errorf("Group.Pid says %d, the command recorded %d", s.Command, tree[0].pid)
	}
	if p := parentOf(t, tree[0].pid); p != host.Process.Pid {
		t.Errorf("the command's parent is %d, want the program %d (a held command is the program's own child)", p, host.Process.Pid)
	}
	if p := parentOf(t, s.Copy); p != host.Process.Pid {
		t.Errorf("the holder's parent is %d, want the program %d", p, host.Process.Pid)
	}
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(s.Copy))
	if err != nil {
		t.Fatal(err)
	}
	err = windows.TerminateProcess(h, 1)
	windows.CloseHandle(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tree {
		if !r.goneWithin(10 * time.Second) {
			t.Errorf("process %d of the group outlived its holder by 10 s", r.pid)
		}
	}
	if ev, _ := windows.WaitForSingleObject(processHandle(t, host), 0); ev == windows.WAIT_OBJECT_0 {
		t.Error("the program ended with its holder")
	}
}

// processHandle is a handle to cmd's process, closed at the test's end.
func processHandle(t *testing.T, cmd *exec.Cmd) windows.Handle {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { windows.CloseHandle(h) })
	return h
}

// TestWinLibraryStop: contain stop TOOL:PID, the Group's tag, asks the
// holder to close the session (its stop event, as contain run's): the
// whole tree ends, the program lives on, and its Close then returns the
// session's report.
func TestWinLibraryStop(t *testing.T) {
	needContain(t)
	host, stdin, out, tree := startWinHost(t, "LIBWINS")
	s := readHostLine(t, out)
	res := run(t, runOpts{}, "stop", "-t", "5s", s.Tag)
	wantCode(t, res, 0)
	for _, r := range tree {
		if !r.goneWithin(10 * time.Second) {
			t.Errorf("process %d of the group outlived contain stop %s", r.pid, s.Tag)
		}
	}
	if ev, _ := windows.WaitForSingleObject(processHandle(t, host), 0); ev == windows.WAIT_OBJECT_0 {
		t.Fatal("the program ended with its Group")
	}
	fmt.Fprintln(stdin, "close")
	line, err := out.ReadBytes('\n')
	var c struct {
		Reports int `json:"reports"`
	}
	if err != nil || json.Unmarshal(line, &c) != nil || c.Reports != 1 {
		t.Errorf("the host's second line %q (%v): want the session's one report", line, err)
	}
}
