//go:build linux && containvm

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/containment"
)

// Package containment on a kernel whose cgroup v2 has its controllers:
// this binary is the program (the libgroup helper), as root and as the
// ordinary user in a cgroup delegated to it, and under systemd, where a
// holder asked for a limit its cgroup cannot hold moves into a scope of
// its own.

// libSeen is what the libgroup helper prints.
type libSeen struct {
	Self    int    `json:"self"`    // the program
	Tag     string `json:"tag"`     // the Group's session ("": a copy per command)
	Command int    `json:"command"` // the command, as it said itself
	Parent  int    `json:"parent"`  // the command's parent, as it said
	Cgroup  string `json:"cgroup"`  // the command's cgroup
	PidsMax string `json:"pids_max"`
	Err     string `json:"err"`
}

// libGroup runs one command in a Group with a --pids limit of pids and
// prints what it saw, as JSON.
func libGroup(pids string) int {
	n, _ := strconv.Atoi(pids)
	seen := libSeen{Self: os.Getpid()}
	defer func() { json.NewEncoder(os.Stdout).Encode(seen) }()
	g, err := containment.NewGroup(containment.Options{Originator: "VMLIB", Limits: containment.Limits{Pids: n}, Grace: time.Second, Log: os.Stderr, Verbose: true})
	if err != nil {
		seen.Err = err.Error()
		return 1
	}
	defer g.Close(context.Background())
	cmd := exec.Command("sh", "-c", `cg=$(grep '^0::' /proc/self/cgroup | cut -d: -f3); echo $$; echo $PPID; echo $cg; cat /sys/fs/cgroup$cg/pids.max 2>/dev/null || echo none`)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		seen.Err = err.Error()
		return 1
	}
	if err := g.Start(cmd); err != nil {
		seen.Err = "Start: " + err.Error()
		return 1
	}
	var lines []string
	b := make([]byte, 4096)
	for {
		k, err := out.Read(b)
		lines = append(lines, string(b[:k]))
		if err != nil {
			break
		}
	}
	if err := g.Wait(cmd); err != nil {
		seen.Err = "Wait: " + err.Error()
	}
	f := strings.Fields(strings.Join(lines, ""))
	if len(f) == 4 {
		seen.Command, _ = strconv.Atoi(f[0])
		seen.Parent, _ = strconv.Atoi(f[1])
		seen.Cgroup, seen.PidsMax = f[2], f[3]
	}
	seen.Tag = g.Tag()
	return 0
}

// runLibGroup runs the libgroup helper as w, in the cgroup dir ("": the
// test's own), and returns what it saw.
func runLibGroup(t *testing.T, w who, dir string, pids int) libSeen {
	t.Helper()
	cmd := exec.Command(vmtest)
	cmd.Env = append(os.Environ(), helperVar+"=libgroup")
	cmd.Args = append(cmd.Args, strconv.Itoa(pids))
	cmd.Dir = openDir(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if dir != "" {
		fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if w.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}
		cmd.Env = append(cmd.Env, "HOME=/home/u", fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", w.uid))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("the program as %s said:\n%s%s", w.name, out, stderr.String())
	var seen libSeen
	if jerr := json.Unmarshal(out, &seen); jerr != nil {
		t.Fatalf("the program as %s: %v (%v)", w.name, err, jerr)
	}
	if seen.Err != "" {
		t.Fatalf("the program as %s: %s", w.name, seen.Err)
	}
	return seen
}

// held says whether the Group held its command in one session: the
// command is the program's own child, in the holder's cgroup.
func (s libSeen) held() bool {
	_, holder, _ := strings.Cut(s.Tag, ":")
	return s.Tag != "" && s.Parent == s.Self && strings.Contains(s.Cgroup, "/contain-"+holder)
}

// TestLibraryHeld: as root, and as the ordinary user in a cgroup
// delegated to it, a Group holds its command in one session: the
// program's own child, born in the holder's cgroup below the program's.
func TestLibraryHeld(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir := group(t, w)
			s := runLibGroup(t, w, dir, 0)
			rel := strings.TrimPrefix(dir, cgroupRoot)
			_, holder, _ := strings.Cut(s.Tag, ":")
			if !s.held() || s.Cgroup != rel+"/contain-"+holder {
				t.Errorf("%+v: want the command the program's own child, in %s/contain-%s", s, rel, holder)
			}
		})
	}
}

// TestSystemdLibrary: under systemd, a Group with a --pids limit, from
// the service's cgroup, which holds the test too: the holder cannot hold
// the limit there and asks systemd for a scope. Root's program may start
// processes anywhere: the Group holds its command in the scope, where
// the kernel holds the limit. The ordinary user's program, in a cgroup
// delegated to it, may not start processes in its user manager's scope
// (their common ancestor is the system's): the Group holds the command in
// a copy of its own, which holds the limit in a scope of its own, and
// Start does not fail.
func TestSystemdLibrary(t *testing.T) {
	const n = 50
	for _, w := range systemdUsers(t) {
		t.Run(w.name, func(t *testing.T) {
			dir := ""
			if w.uid != 0 {
				dir = group(t, w)
			}
			s := runLibGroup(t, w, dir, n)
			switch {
			case w.uid == 0 && (!s.held() || !strings.Contains(s.Cgroup, ".scope/")):
				t.Errorf("%+v: want the command held, in the holder's scope", s)
			case w.uid != 0 && (s.held() || s.Tag != ""):
				t.Errorf("%+v: want a copy per command (the user manager's scope is out of the program's reach)", s)
			}
			if s.PidsMax != strconv.Itoa(n) {
				t.Errorf("the command's cgroup %s has pids.max %s, want %d (the kernel holding --pids)", s.Cgroup, s.PidsMax, n)
			}
		})
	}
}
