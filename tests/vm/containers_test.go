//go:build linux && containvm

package vm

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

// A container, as the engines make one: a PID, mount and cgroup
// namespace, its own /proc and its own cgroup2 mount, rooted at the
// container's group; contain runs inside it. The host's root looks on
// with ps and reap, as a cleanup cron job does (docs/GUIDE.md, contain
// in containers).

// containerHelper is the container's two helpers: nsspawn, started in
// the container's group, starts nsinit in new namespaces (the cgroup
// namespace is rooted at the group of the process that makes it) and
// waits; nsinit, PID 1 of the container, mounts its /proc and cgroup2,
// tags an orphan with TOOL:77 (no such PID in the container), starts
// contain run -o TOOL -- sleep 300, and writes, to DIR, the namespace,
// contain's PID there, its cgroup as the container sees it, and how it
// ended.
func containerHelper(name string, args []string) int {
	dir, tool := args[0], args[1]
	self, _ := os.Executable()
	switch name {
	case "nsspawn":
		cmd := exec.Command(self, dir, tool)
		cmd.Env = append(os.Environ(), helperVar+"=nsinit")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "nsspawn:", err)
			return 1
		}
		return 0
	case "nsmemspawn":
		// A privileged container as some engines make it: a PID and
		// mount namespace, the host's cgroup tree (no cgroup
		// namespace), so that the kernel's log names contain's cgroup
		// as contain does.
		cmd := exec.Command(self, dir, tool)
		cmd.Env = append(os.Environ(), helperVar+"=nsmeminit")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "nsmemspawn:", err)
			return 1
		}
		return 0
	case "nsmeminit":
		// PID 1 of that container: its own /proc, then contain run
		// --memory 64M over the escapee whose hog allocates 400 MiB,
		// its report and status written to DIR.
		write := func(file, s string) { os.WriteFile(filepath.Join(dir, file), []byte(s+"\n"), 0o644) }
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return 1
		}
		unix.Unmount("/proc", unix.MNT_DETACH)
		if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
			fmt.Fprintln(os.Stderr, "nsmeminit: mount /proc:", err)
			return 1
		}
		run := exec.Command(contain, append([]string{"run", "-v", "-o", tool, "--memory", "64M", "-t", "60", "--report", filepath.Join(dir, "report.json"), "--"},
			helperCmd("escapee", dir, "400")...)...)
		run.Env = os.Environ()
		// contain alone in its group (the one the test named), whose
		// parent lets memory down: the kernel then holds the limit.
		fd, err := unix.Open(os.Getenv("CONTAIN_VM_RUN_CGROUP"), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nsmeminit:", err)
			return 1
		}
		run.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		var stderr strings.Builder
		run.Stderr = &stderr
		err = run.Run()
		write("run.err", stderr.String())
		code := -1
		if run.ProcessState != nil {
			code = run.ProcessState.ExitCode()
		}
		write("run.code", fmt.Sprint(code, err))
		sleepForever()
	case "nsinit":
		write := func(file, s string) { os.WriteFile(filepath.Join(dir, file), []byte(s+"\n"), 0o644) }
		for _, m := range []struct{ src, target, fstype string }{{"", "/", ""}, {"proc", "/proc", "proc"}, {"cgroup2", cgroupRoot, "cgroup2"}} {
			var err error
			if m.fstype == "" {
				err = unix.Mount("", m.target, "", unix.MS_REC|unix.MS_PRIVATE, "")
			} else {
				// The host's mount is taken away first: the same
				// hierarchy cannot be mounted on itself.
				unix.Unmount(m.target, unix.MNT_DETACH)
				err = unix.Mount(m.src, m.target, m.fstype, 0, "")
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "nsinit: mount %s: %v\n", m.target, err)
				return 1
			}
		}
		ns, _ := os.Readlink("/proc/self/ns/pid")
		write("ns", ns)
		orphan := exec.Command("sleep", "300")
		orphan.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+tool+":77")
		if err := orphan.Start(); err != nil {
			return 1
		}
		write("orphan", strconv.Itoa(orphan.Process.Pid))
		run := exec.Command(contain, "run", "-v", "-o", tool, "--", "sleep", "300")
		run.Env = os.Environ()
		var stderr strings.Builder
		run.Stderr = &stderr
		if err := run.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "nsinit:", err)
			return 1
		}
		write("run", strconv.Itoa(run.Process.Pid))
		err := run.Wait()
		write("run.err", stderr.String())
		write("run.code", fmt.Sprint(run.ProcessState.Sys().(syscall.WaitStatus), err))
		sleepForever()
	}
	return 2
}

// TestContainerNamespaces: contain inside a container (above), and the
// host's root beside it. The run makes its group below the container's
// (contain-PID-nsINODE); the host's ps calls it alive in its namespace
// and the orphan TOOL:77 orphaned; the host's reap -n does not offer the
// run's group, and its reap -o TOOL ends the orphan and leaves the run
// running.
func TestContainerNamespaces(t *testing.T) {
	dir, tmp := group(t, who{"root", 0}), openDir(t)
	tool := fmt.Sprintf("VMNS%d", time.Now().UnixNano()%1e6)
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	spawn := exec.Command(vmtest, tmp, tool)
	spawn.Env = append(os.Environ(), helperVar+"=nsspawn")
	spawn.Stdout, spawn.Stderr = os.Stderr, os.Stderr
	spawn.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := spawn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spawn.Process.Kill(); spawn.Wait() }()
	read := func(name string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(tmp, name))
			if err == nil && strings.HasSuffix(string(b), "\n") {
				return strings.TrimSpace(string(b))
			}
			if time.Now().After(deadline) {
				t.Fatalf("the container wrote no %s", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ns, nspid := read("ns"), read("run")
	inode := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	value := tool + ":" + nspid
	runGroup := filepath.Join(dir, "contain-"+nspid+"-ns"+inode)

	type psSession struct {
		Originator struct {
			Value        string `json:"value"`
			PIDNamespace uint64 `json:"pid_namespace"`
			PIDHere      int    `json:"pid_here"`
		} `json:"originator"`
		State     string `json:"state"`
		Reason    string `json:"reason"`
		Processes []struct {
			PID int `json:"pid"`
		} `json:"processes"`
	}
	sessions := map[string]psSession{}
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := exec.Command(contain, "ps", "--format", "json", "-o", tool).Output()
		if err != nil {
			t.Fatalf("ps: %v", err)
		}
		var ps struct{ Sessions []psSession }
		json.Unmarshal(out, &ps)
		clear(sessions)
		for _, s := range ps.Sessions {
			sessions[s.Originator.Value] = s
		}
		if len(sessions[value].Processes) > 0 && len(sessions[tool+":77"].Processes) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ps does not show both sessions: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	live, orphan := sessions[value], sessions[tool+":77"]
	t.Logf("ps: %s %s (%s); %s:77 %s (%s)", value, live.State, live.Reason, tool, orphan.State, orphan.Reason)
	if live.State != "alive" || fmt.Sprint(live.Originator.PIDNamespace) != inode || live.Originator.PIDHere <= 1 {
		t.Errorf("ps: %s is %s (%s) in namespace %d; want alive in %s", value, live.State, live.Reason, live.Originator.PIDNamespace, inode)
	}
	if orphan.State != "orphaned" {
		t.Errorf("ps: %s:77 is %s (%s); want orphaned", tool, orphan.State, orphan.Reason)
	}
	command := live.Processes[0].PID
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", command)); !strings.HasSuffix(strings.TrimSpace(string(b)), strings.TrimPrefix(runGroup, cgroupRoot)) {
		t.Errorf("COMMAND is in %q, want the run's group %s below the container's", b, runGroup)
	}
	// The host's cleanup: a dry run of everything, then the tool's.
	out, err := exec.Command(contain, "reap", "-n").CombinedOutput()
	t.Logf("reap -n: %v\n%s", err, out)
	if strings.Contains(string(out), runGroup) {
		t.Errorf("the host's reap -n offers the container's live group %s", runGroup)
	}
	out, err = exec.Command(contain, "reap", "-g", "1s", "-o", tool).CombinedOutput()
	t.Logf("reap -o %s: %v\n%s", tool, err, out)
	if err != nil {
		t.Errorf("reap -o %s: %v", tool, err)
	}
	if len(testtool.Living([]int{command, live.Originator.PIDHere})) != 2 {
		t.Errorf("the host's reap ended the container's live run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "run.code")); err == nil {
		t.Errorf("the container's contain ended: %s %s", read("run.code"), read("run.err"))
	}
	if o, _ := strconv.Atoi(read("orphan")); o > 0 && len(orphan.Processes) > 0 && len(testtool.Living([]int{orphan.Processes[0].PID})) != 0 {
		t.Errorf("the container's orphan %s:77 outlived the host's reap", tool)
	}
}

// TestContainerOOMVictim: contain in a privileged container's PID
// namespace, on the host's cgroup tree, holds --memory with memory.max,
// and the kernel's OOM killer ends the escapee's hog. The victim the
// report names is a process of the container as contain sees it: the
// kernel's log there names the right cgroup but gives the host's PIDs
// (before, held_by said the hog's host PID, which in the container is
// some other process or none), so contain names those it reaped.
func TestContainerOOMVictim(t *testing.T) {
	dir, tmp := group(t, who{"root", 0}), openDir(t)
	tool := fmt.Sprintf("VMOOM%d", time.Now().UnixNano()%1e6)
	// The container's processes in one group, contain in another beside
	// it, and memory let down to both.
	spawnGroup, runGroup := filepath.Join(dir, "container"), filepath.Join(dir, "run")
	for _, d := range []string{spawnGroup, runGroup} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(spawnGroup, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	mark := kmsgMark()
	spawn := exec.Command(vmtest, tmp, tool)
	spawn.Env = append(os.Environ(), helperVar+"=nsmemspawn", "CONTAIN_VM_RUN_CGROUP="+runGroup)
	spawn.Stdout, spawn.Stderr = os.Stderr, os.Stderr
	spawn.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := spawn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spawn.Process.Kill(); spawn.Wait() }()
	var code []byte
	for deadline := time.Now().Add(containWait + 30*time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _ = os.ReadFile(filepath.Join(tmp, "run.code")); strings.HasSuffix(string(code), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("contain in the container did not end")
		}
	}
	stderr, _ := os.ReadFile(filepath.Join(tmp, "run.err"))
	if !strings.HasPrefix(string(code), "137 ") {
		t.Fatalf("contain in the container: %s, want 137\n%s", code, stderr)
	}
	if len(oomKills(mark)) == 0 {
		t.Fatalf("the kernel's log shows no OOM kill\n%s\n%s", stderr, mustRead(filepath.Join(tmp, "report.json")))
	}
	var r report.Report
	if b, err := os.ReadFile(filepath.Join(tmp, "report.json")); err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("the report: %v\n%s", err, b)
	}
	tree := map[int]bool{}
	for _, f := range []string{"command", "hog"} {
		b, _ := os.ReadFile(filepath.Join(tmp, f))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		tree[pid] = true
	}
	l := r.Limits["memory"]
	if !l.Exceeded || l.EnforcedBy != "cgroup memory.max" || len(l.HeldBy) == 0 {
		t.Fatalf("the report's memory limit: %+v\n%s", l, stderr)
	}
	for _, h := range l.HeldBy {
		if !tree[h.PID] || h.Comm != "vmtest" {
			t.Errorf("held_by names PID %d (%s), not one of the tree in the container %v\n%s", h.PID, h.Comm, tree, stderr)
		}
	}
	t.Logf("held_by: %s", report.HolderWords(l.HeldBy))
}

// mustRead is path's content, or the error reading it.
func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
