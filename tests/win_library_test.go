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
