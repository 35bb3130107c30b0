//go:build linux

package tests

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

	"github.com/contain-cli/contain/internal/testtool"
)

// contain in a PID namespace (a container, unshare), seen from the host:
// a tag's PID is a PID of the namespace it was made in, and the host's ps,
// reap, stop and wait judge it there (docs/GUIDE.md, contain in
// containers).

// nsPsSession is what these tests read of contain ps --format json.
type nsPsSession struct {
	Originator struct {
		Value        string `json:"value"`
		PID          int    `json:"pid"`
		PIDNamespace uint64 `json:"pid_namespace"`
		PIDHere      int    `json:"pid_here"`
	} `json:"originator"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Processes []struct {
		PID int `json:"pid"`
	} `json:"processes"`
}

// hostPS runs the host's contain ps -o tool and returns its sessions.
func hostPS(t *testing.T, tool string) []nsPsSession {
	t.Helper()
	return hostPSAs(t, runOpts{}, tool)
}

// hostPSAs is hostPS as o says (as nobody).
func hostPSAs(t *testing.T, o runOpts, tool string) []nsPsSession {
	t.Helper()
	out, err := containCmd(o, "ps", "--format", "json", "-o", tool).Output()
	if err != nil {
		t.Fatalf("contain ps: %v", err)
	}
	var ps struct {
		Sessions []nsPsSession `json:"sessions"`
	}
	if err := json.Unmarshal(out, &ps); err != nil {
		t.Fatalf("contain ps: %v\n%s", err, out)
	}
	return ps.Sessions
}

// inNamespace starts script in a new PID namespace with its own /proc,
// as the test's user; the namespace ends with the test (unshare
// --kill-child: its PID 1 dies, and the kernel kills the rest).
func inNamespace(t *testing.T, o runOpts, script string) *exec.Cmd {
	t.Helper()
	argv := []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", script}
	if o.asNobody {
		// An ordinary user makes a PID namespace inside a user
		// namespace of its own, as rootless Podman does.
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "unshare", "--user", "--map-root-user"}, argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = withoutTag(os.Environ())
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// The namespace, read while unshare lives: its init's end kills
		// every process of it, a contain run's crash guard included,
		// which leaves that run's cgroup (contain-PID-nsINODE) behind,
		// empty. It is removed here, as the test made it.
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid_for_children", cmd.Process.Pid))
		cmd.Process.Kill()
		<-done
		removeNamespaceCgroups(t, ns)
	})
	return cmd
}

// removeNamespaceCgroups removes the cgroups that contain runs of PID
// namespace ns ("pid:[INODE]") made beside the tests' own and left when
// the namespace was killed, once they are empty (a few seconds at most).
func removeNamespaceCgroups(t *testing.T, ns string) {
	inode, ok := strings.CutPrefix(ns, "pid:[")
	inode, ok2 := strings.CutSuffix(inode, "]")
	own := ownCgroupDir()
	if !ok || !ok2 || own == "" {
		return
	}
	var dirs []string
	for _, d := range []string{own, filepath.Dir(own)} {
		m, _ := filepath.Glob(filepath.Join(d, "contain-*-ns"+inode))
		dirs = append(dirs, m...)
	}
	for _, d := range dirs {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			err := os.Remove(d)
			if err == nil || os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the cgroup %s a run of the test's namespace made is still there: %v", d, err)
				break
			}
		}
	}
}

// readFileWait waits for dir/name to hold a line, and returns it.
func readFileWait(t *testing.T, dir, name string) string {
	t.Helper()
	var s string
	waitFor(t, name+" written", 30*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		s = strings.TrimSpace(string(b))
		return strings.HasSuffix(string(b), "\n")
	})
	return s
}

// hostPIDIn finds the PID here of the process whose PID in namespace ns
// (the inode of its /proc/PID/ns/pid) is nspid.
func hostPIDIn(t *testing.T, ns string, nspid int) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || l != ns {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, "NSpid:")); strings.HasPrefix(line, "NSpid:") && len(f) > 0 && f[len(f)-1] == strconv.Itoa(nspid) {
				return pid
			}
		}
	}
	t.Fatalf("no process of %s has PID %d there", ns, nspid)
	return 0
}

// TestPIDNamespaceHost: contain run inside a PID namespace at namespace
// PID 303 (a number the host's PID 303 may or may not have), beside an
// orphaned session of the namespace tagged TOOL:3 (no namespace PID 3;
// the host's PID 3 is a kernel thread, older than everything). From the
// host: ps calls the run alive, names its namespace and its contain's PID
// here, and calls TOOL:3 orphaned; reap -o TOOL ends the orphan and
// leaves the live run alone (its COMMAND runs, its contain has not
// ended); wait -t times out on it; stop asks it, through its contain's
// PID here, and it ends as a run asked to stop does (143); wait then has
// nothing to wait for. Before sessions were judged in their namespace,
// ps called TOOL:3 alive (the kernel thread) and TOOL:303 gone, and the
// host's reap ended the live run.
func TestPIDNamespaceHost(t *testing.T) {
	inNamespaces(t, testPIDNamespaceHost)
}

// inNamespaces runs f, in parallel, once as root and once as nobody
// (inNamespace's user namespace), each a subtest of that name.
func inNamespaces(t *testing.T, f func(t *testing.T, o runOpts)) {
	requireRoot(t, "a PID namespace (unshare --pid), and nobody's through setpriv")
	testtool.Need(t, "unshare", "util-linux")
	testtool.Need(t, "setpriv", "util-linux")
	for _, o := range []runOpts{{}, {asNobody: true}} {
		name := "root"
		if o.asNobody {
			name = "nobody"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, o)
		})
	}
}

// testPIDNamespaceHost is TestPIDNamespaceHost with the namespace and the
// host's commands run as o says; as nobody, root's reap runs beside them
// too, and leaves the live run alone.
func testPIDNamespaceHost(t *testing.T, o runOpts) {
	tool := uniqueTool(t)
	dir := sharedDir(t)
	script := fmt.Sprintf(`
RUNNING_PROCESS_ORIGINATOR=%[2]s:3 sleep 300 &
echo $! > %[1]s/orphan
echo 302 > /proc/sys/kernel/ns_last_pid
%[3]s run -o %[2]s -- sleep 300 > %[1]s/run.out 2>&1 &
run=$!
echo $run > %[1]s/run
readlink /proc/self/ns/pid > %[1]s/ns
wait $run; echo $? > %[1]s/run.code
wait
`, dir, tool, bin)
	inNamespace(t, o, script)
	if got := readFileWait(t, dir, "run"); got != "303" {
		t.Skipf("contain got namespace PID %s, not 303 (ns_last_pid not honoured)", got)
	}
	if got := readFileWait(t, dir, "orphan"); got != "2" {
		t.Fatalf("the orphan got namespace PID %s, want 2 (so that PID 3 is never used there)", got)
	}
	ns := readFileWait(t, dir, "ns")
	host := hostPIDIn(t, ns, 303)
	orphan := hostPIDIn(t, ns, 2)
	value, orphanValue := tool+":303", tool+":3"

	var live, dead nsPsSession
	waitFor(t, "the run's COMMAND", 30*time.Second, func() bool {
		live, dead = nsPsSession{}, nsPsSession{}
		for _, s := range hostPSAs(t, o, tool) {
			switch s.Originator.Value {
			case value:
				live = s
			case orphanValue:
				dead = s
			}
		}
		return len(live.Processes) > 0 && len(dead.Processes) > 0
	})
	wantNS, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]"), 10, 64)
	if live.State != "alive" || live.Originator.PIDNamespace != wantNS || live.Originator.PIDHere != host {
		t.Errorf("ps: %s is %s (%s), namespace %d, its originator here PID %d; want alive, in %d (%s), at PID %d",
			value, live.State, live.Reason, live.Originator.PIDNamespace, live.Originator.PIDHere, wantNS, ns, host)
	}
	if dead.State != "orphaned" || dead.Originator.PIDNamespace != wantNS || dead.Originator.PIDHere != 0 {
		t.Errorf("ps: %s is %s (%s), here PID %d; want orphaned: the namespace has no PID 3, whatever the host's PID 3 is",
			orphanValue, dead.State, dead.Reason, dead.Originator.PIDHere)
	}
	command := live.Processes[0].PID

	if o.asNobody {
		// Root's cleanup beside nobody's container: it ends the
		// orphan, and leaves the live run alone.
		if out, err := exec.Command(bin, "reap", "-g", "1s", "-o", tool).CombinedOutput(); err != nil {
			t.Errorf("root's reap -o %s: %v\n%s", tool, err, out)
		}
	}
	out, err := containCmd(o, "reap", "-g", "1s", "-o", tool).CombinedOutput()
	if err != nil {
		t.Errorf("reap -o %s: %v\n%s", tool, err, out)
	}
	if !alive(command) || !alive(host) {
		t.Fatalf("the host's reap ended the namespace's live run (COMMAND %d alive: %v, contain %d alive: %v):\n%s",
			command, alive(command), host, alive(host), out)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.code")); err == nil {
		t.Fatalf("the namespace's contain ended: %s", readFileWait(t, dir, "run.code"))
	}
	waitFor(t, "the orphan to be ended", 10*time.Second, func() bool { return !alive(orphan) })

	res := containCmd(o, "wait", "-t", "0.3", value)
	if b, err := res.CombinedOutput(); exitCode(err) != 124 {
		t.Errorf("wait -t 0.3 %s: status %d, want 124 (it runs)\n%s", value, exitCode(err), b)
	}
	b, err := containCmd(o, "stop", "-t", "20", value).CombinedOutput()
	if err != nil {
		t.Errorf("stop %s: %v\n%s", value, err, b)
	}
	if !strings.Contains(string(b), fmt.Sprintf("asked PID 303 of PID namespace %d (PID %d here) to stop", wantNS, host)) {
		t.Errorf("stop %s does not say it asked PID 303 of the namespace, PID %d here:\n%s", value, host, b)
	}
	if got := readFileWait(t, dir, "run.code"); got != "143" {
		t.Errorf("the namespace's contain run ended with %s, want 143 (asked to stop)\n%s", got, readFileWait(t, dir, "run.out"))
	}
	if alive(command) {
		t.Errorf("COMMAND %d outlived its run", command)
	}
	if b, err := containCmd(o, "wait", "-t", "5", value).CombinedOutput(); err != nil {
		t.Errorf("wait %s after it ended: %v\n%s", value, err, b)
	}
}

// exitCode is the status of a command that ran, from its error.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// TestPIDNamespaceInits: two contain runs at once, each PID 1 of its own
// PID namespace (two containers), in the hierarchy they share. Each gets
// a cgroup of its own (contain-1-nsINODE), where the second used to find
// contain-1 taken and fall back to the shim; the host's ps shows two
// live sessions TOOL:1, one per namespace, neither judged by the host's
// PID 1; the host's reap -o TOOL ends nothing.
func TestPIDNamespaceInits(t *testing.T) {
	t.Parallel()
	needNamespaceCgroups(t)
	tool := uniqueTool(t)
	dir := sharedDir(t)
	for i := range 2 {
		script := fmt.Sprintf(`readlink /proc/self/ns/pid > %[1]s/ns%[4]d
exec %[3]s run -v -o %[2]s -- sleep 300 2> %[1]s/err%[4]d`, dir, tool, bin, i)
		inNamespace(t, runOpts{}, script)
	}
	var sessions []nsPsSession
	waitFor(t, "both runs' COMMANDs", 30*time.Second, func() bool {
		sessions = hostPS(t, tool)
		n := 0
		for _, s := range sessions {
			n += len(s.Processes)
		}
		return len(sessions) == 2 && n == 2
	})
	namespaces := map[uint64]bool{}
	for _, s := range sessions {
		if s.Originator.Value != tool+":1" || s.State != "alive" || s.Originator.PIDNamespace == 0 || s.Originator.PIDHere <= 1 {
			t.Errorf("ps: %+v; want %s:1 alive, in a namespace of its own, its originator a PID here other than 1", s, tool)
		}
		namespaces[s.Originator.PIDNamespace] = true
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.Processes[0].PID))
		want := fmt.Sprintf("/contain-1-ns%d\n", s.Originator.PIDNamespace)
		if !strings.HasSuffix(string(cg), want) {
			t.Errorf("COMMAND %d is in %q, want its run's own group ending %q", s.Processes[0].PID, cg, want)
		}
	}
	if len(namespaces) != 2 {
		t.Errorf("ps shows the two runs in %d namespaces, want 2: %+v", len(namespaces), sessions)
	}
	for i := range 2 {
		if b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("err%d", i))); !strings.Contains(string(b), "cgroup /") || strings.Contains(string(b), "shim") {
			t.Errorf("run %d did not use a cgroup of its own:\n%s", i, b)
		}
	}
	// wait tells the two sessions of one value apart, each with its
	// own process.
	b, err := exec.Command(bin, "wait", "-t", "0.3", tool+":1").Output()
	if exitCode(err) != 124 {
		t.Errorf("wait -t 0.3 %s:1: status %d, want 124\n%s", tool, exitCode(err), b)
	}
	for _, s := range sessions {
		want := fmt.Sprintf("%s:1@pidns:%d  still running: %d\n", tool, s.Originator.PIDNamespace, s.Processes[0].PID)
		if !strings.Contains(string(b), want) {
			t.Errorf("wait does not say %q:\n%s", want, b)
		}
	}
	if b, err := exec.Command(bin, "reap", "-o", tool).CombinedOutput(); err != nil {
		t.Errorf("reap -o %s: %v\n%s", tool, err, b)
	}
	for _, s := range sessions {
		if !alive(s.Processes[0].PID) || !alive(s.Originator.PIDHere) {
			t.Errorf("the host's reap ended a live run of namespace %d", s.Originator.PIDNamespace)
		}
	}
}

// TestPIDNamespaceUnsure: a process in a PID namespace carries
// TOOL:<a host sleep's PID>, as a tool that is no subreaper leaves when
// its child, which made the namespace, was reparented: no ancestor of it
// has the tag's PID, and the namespace has no such PID either, but the
// host's process of that PID runs, is older, and could be its
// originator. The host's ps calls the session unknown and names that
// process; the host's reap ends nothing.
func TestPIDNamespaceUnsure(t *testing.T) {
	t.Parallel()
	requireRoot(t, "a PID namespace (unshare --pid)")
	testtool.Need(t, "unshare", "util-linux")
	tool := uniqueTool(t)
	dir := sharedDir(t)
	host := exec.Command("sleep", "300")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, host.Process.Pid)
	go host.Wait()
	value := fmt.Sprintf("%s:%d", tool, host.Process.Pid)
	inNamespace(t, runOpts{}, fmt.Sprintf(`RUNNING_PROCESS_ORIGINATOR=%s sleep 300 & echo $! > %s/member; wait`, value, dir))
	nspid, _ := strconv.Atoi(readFileWait(t, dir, "member"))
	if nspid == host.Process.Pid {
		t.Skip("the namespace's member got the host sleep's PID")
	}
	var s nsPsSession
	waitFor(t, "the member's session", 30*time.Second, func() bool {
		for _, x := range hostPS(t, tool) {
			if x.Originator.Value == value && len(x.Processes) == 1 {
				s = x
				return true
			}
		}
		return false
	})
	member := s.Processes[0].PID
	if s.State != "unknown" || !strings.Contains(s.Reason, fmt.Sprintf("PID %d of this namespace, sleep, may be its originator", host.Process.Pid)) {
		t.Errorf("ps: %s is %s (%s); want unknown, naming the host's sleep", value, s.State, s.Reason)
	}
	if b, err := exec.Command(bin, "reap", "-g", "1s", "-o", tool).CombinedOutput(); err != nil || !alive(member) {
		t.Errorf("reap -o %s ended the member (%v, alive %v):\n%s", tool, err, alive(member), b)
	}
}

// TestPIDNamespaceSeesHostCgroup: inside a PID namespace that shares the
// host's cgroup hierarchy (unshare without --cgroup, a container run with
// --cgroupns=host), the group contain-PID of the host's live run names a
// PID of the host's namespace, which cannot be looked up from inside:
// reap -n there does not offer it. Before, the namespace's reap looked up
// that PID among its own and called the group left over.
func TestPIDNamespaceSeesHostCgroup(t *testing.T) {
	t.Parallel()
	needNamespaceCgroups(t)
	tool := uniqueTool(t)
	dir := sharedDir(t)
	run, _ := startContain(t, runOpts{}, "run", "-o", tool, "--", "sleep", "300")
	want := fmt.Sprintf("/contain-%d\n", run.Process.Pid)
	waitFor(t, "the run's cgroup", 30*time.Second, func() bool {
		for _, pid := range tagged(fmt.Sprintf("%s:%d", tool, run.Process.Pid)) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); strings.HasSuffix(string(b), want) {
				return true
			}
		}
		return false
	})
	// A dry run: it kills nothing, whatever it finds.
	inNamespace(t, runOpts{}, fmt.Sprintf(`%s reap -n > %s/out 2>&1; echo $? >> %s/out; echo done > %s/done`, bin, dir, dir, dir))
	readFileWait(t, dir, "done")
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	if strings.Contains(string(b), strings.TrimSpace(want)+" ") || strings.Contains(string(b), strings.TrimSpace(want)+"\n") {
		t.Errorf("reap -n inside the namespace offers the host's live run's group %s:\n%s", strings.TrimSpace(want), b)
	}
}

// TestPIDNamespaceDeadRunCgroup: a contain run in a PID namespace and its
// crash guard are both killed (SIGKILL, the guard first), leaving a
// setsid escapee in the run's group, contain-PID-nsINODE. The host's reap
// -o TOOL finds the orphaned session in its namespace, and its group:
// the escapee is ended, the group removed.
func TestPIDNamespaceDeadRunCgroup(t *testing.T) {
	t.Parallel()
	needNamespaceCgroups(t)
	needRealSetsid(t)
	tool := uniqueTool(t)
	dir := sharedDir(t)
	inNamespace(t, runOpts{}, fmt.Sprintf(`
readlink /proc/self/ns/pid > %[1]s/ns
%[3]s run -v -o %[2]s -- sh -c 'setsid sleep 300 & echo $! > %[1]s/escapee; sleep 300' 2> %[1]s/err &
run=$!
echo $run > %[1]s/run
n=0; while ! [ -s %[1]s/escapee ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done
guard=$(sed -n 's/.*crash guard: PID \([0-9]*\).*/\1/p' %[1]s/err)
kill -9 $guard $run
echo "$guard" > %[1]s/guard
wait
sleep 300
`, dir, tool, bin))
	ns, nspid := readFileWait(t, dir, "ns"), readFileWait(t, dir, "run")
	if readFileWait(t, dir, "guard") == "" {
		b, _ := os.ReadFile(filepath.Join(dir, "err"))
		t.Fatalf("no crash guard named by -v:\n%s", b)
	}
	escapeeNS, _ := strconv.Atoi(readFileWait(t, dir, "escapee"))
	escapee := hostPIDIn(t, ns, escapeeNS)
	inode := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	group := filepath.Join(filepath.Dir(cgroupDirOf(t, escapee)), "contain-"+nspid+"-ns"+inode)
	if got := cgroupDirOf(t, escapee); got != group {
		t.Fatalf("the escapee is in %s, want the dead run's group %s", got, group)
	}
	out, err := exec.Command(bin, "reap", "-g", "1s", "-o", tool).CombinedOutput()
	if err != nil {
		t.Errorf("reap -o %s: %v\n%s", tool, err, out)
	}
	waitFor(t, "the escapee to be ended", 10*time.Second, func() bool { return !alive(escapee) })
	if _, err := os.Stat(group); err == nil {
		t.Errorf("the dead run's group %s is still there:\n%s", group, out)
	}
}

// cgroupDirOf is the cgroup v2 directory of pid.
func cgroupDirOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			own := ownCgroupDir()
			mine, _ := os.ReadFile("/proc/self/cgroup")
			for _, l := range strings.Split(string(mine), "\n") {
				if r, ok := strings.CutPrefix(l, "0::"); ok {
					return filepath.Join(strings.TrimSuffix(own, r), rel)
				}
			}
		}
	}
	t.Fatalf("no cgroup v2 line for %d: %s", pid, b)
	return ""
}

// needNamespaceCgroups skips a test that needs root, unshare and a
// cgroup v2 hierarchy it can write.
func needNamespaceCgroups(t *testing.T) {
	t.Helper()
	requireRoot(t, "PID namespaces (unshare --pid), and a writable cgroup v2 hierarchy")
	testtool.Need(t, "unshare", "util-linux")
	if ownCgroupDir() == "" {
		t.Skip("no cgroup v2 hierarchy this test can write")
	}
}
