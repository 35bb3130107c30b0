//go:build linux && containvm

package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

// The tests here run inside the VM that TestKernel boots (host_test.go),
// as its PID 1's child, on a cgroup v2 hierarchy of their own. Each
// starts contain alone in a cgroup the test makes below the root (as a
// CI job's or a container's cgroup holds only the job), as root, and as
// an ordinary user (uid 1000) in a cgroup delegated to it as systemd
// delegates one (the directory and its cgroup.procs, cgroup.threads and
// cgroup.subtree_control are the user's).

const (
	cgroupRoot = "/sys/fs/cgroup"
	userUID    = 1000
)

// contain and vmtest are where the VM has them: /bin in the busybox VM,
// /usr/local/bin in the systemd one.
var contain, vmtest = "/bin/contain", "/bin/vmtest"

// helperVar makes this binary a helper program instead (see helpers).
const helperVar = "CONTAIN_VM_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperVar); h != "" {
		os.Exit(helper(h, os.Args[1:]))
	}
	if os.Getenv("CONTAIN_IN_VM") != "1" {
		fmt.Fprintln(os.Stderr, "these tests change cgroups and kill processes: they run only inside the VMs that TestKernel and TestSystemd (go test ./tests/vm) boot")
		os.Exit(2)
	}
	if os.Getenv("CONTAIN_VM_SYSTEMD") == "1" {
		contain, vmtest = "/usr/local/bin/contain", "/usr/local/bin/vmtest"
		os.Exit(m.Run()) // systemd has enabled the controllers
	}
	if err := os.WriteFile(cgroupRoot+"/cgroup.subtree_control", []byte("+memory +pids +cpu"), 0); err != nil {
		fmt.Fprintln(os.Stderr, "cannot enable the controllers in the root cgroup:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// who runs contain in a test: root, or the ordinary user.
type who struct {
	name string
	uid  int
}

var everyone = []who{{"root", 0}, {"user", userUID}}

// group makes a cgroup below the root for one run of contain, delegated
// to w, and removes it at the end (what is left in it is killed first).
func group(t *testing.T, w who) string {
	t.Helper()
	dir, err := os.MkdirTemp(cgroupRoot, "t-")
	if err != nil {
		t.Fatal(err)
	}
	if w.uid != 0 {
		for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
			if err := os.Chown(filepath.Join(dir, f), w.uid, w.uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		if err := testtool.RemoveCgroup(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// containWait bounds one contain run of the tests.
const containWait = 60 * time.Second

// run is one contain run's outcome.
type run struct {
	code   int
	stderr string
	report report.Report
	took   time.Duration
}

// startContain starts contain run with args as w, in the cgroup dir
// (CLONE_INTO_CGROUP: nothing else of the test is ever in it; "": in the
// test's own), with -v and a report.
func startContain(t *testing.T, w who, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	tmp := openDir(t)
	rep := filepath.Join(tmp, "report.json")
	cmd := containCmd(t, w, dir, tmp, append([]string{"run", "-v", "--report", rep}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr, rep
}

// containCmd is contain with args as w, in the cgroup dir (see
// startContain), in the directory tmp.
func containCmd(t *testing.T, w who, dir, tmp string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(contain, args...)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if dir != "" {
		fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if w.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}
		cmd.Env = append(os.Environ(), "HOME=/home/u", fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", w.uid))
	}
	return cmd
}

// containRun runs contain run to its end (see startContain).
func containRun(t *testing.T, w who, dir string, args ...string) run {
	t.Helper()
	start := time.Now()
	cmd, stderr, rep := startContain(t, w, dir, args...)
	// A contain that hangs is killed, and what it said so far shown,
	// rather than the whole VM timing out.
	hung := time.AfterFunc(containWait, func() {
		t.Errorf("contain still ran after %v: killed", containWait)
		cmd.Process.Kill()
	})
	cmd.Wait()
	hung.Stop()
	r := run{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), took: time.Since(start)}
	t.Logf("contain %s as %s: exit %d in %v\n%s", strings.Join(args, " "), w.name, r.code, r.took.Round(time.Millisecond), r.stderr)
	if b, err := os.ReadFile(rep); err == nil {
		if err := json.Unmarshal(b, &r.report); err != nil {
			t.Errorf("report: %v\n%s", err, b)
		}
	} else {
		t.Errorf("no report: %v", err)
	}
	return r
}

// helperCmd is this binary run as helper h.
func helperCmd(h string, args ...string) []string {
	return append([]string{"env", helperVar + "=" + h, vmtest}, args...)
}

// limitOf is the report's limit named by its option ("--cpu-time").
func limitOf(t *testing.T, r run, option string) report.Limit {
	t.Helper()
	l, ok := r.report.Limits[strings.ReplaceAll(strings.TrimPrefix(option, "--"), "-", "_")]
	if !ok {
		t.Fatalf("no %s among the report's limits: %+v", option, r.report.Limits)
	}
	return l
}

// checkClean checks that dir is as the test made it: no group below it,
// no controller enabled in it, no process in it.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		var subs []string
		for _, e := range entries {
			if e.IsDir() {
				subs = append(subs, e.Name())
			}
		}
		ctl, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if len(subs) == 0 && len(bytes.TrimSpace(ctl)) == 0 && len(bytes.TrimSpace(procs)) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s after the run: groups below it %v, controllers enabled %q, processes %q", dir, subs, bytes.TrimSpace(ctl), bytes.TrimSpace(procs))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kmsgMark is where the kernel's log ends now, for oomKills.
func kmsgMark() int {
	return len(readKmsg())
}

func readKmsg() []string {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var lines []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EPIPE {
			continue // overwritten while read: the next record follows
		}
		if n <= 0 || err != nil {
			return lines
		}
		lines = append(lines, string(buf[:n]))
	}
}

// oomKills are the processes the kernel's OOM killer killed since mark:
// "PID (COMM)".
func oomKills(mark int) []string {
	var out []string
	lines := readKmsg()
	if mark > len(lines) {
		mark = len(lines)
	}
	for _, l := range lines[mark:] {
		_, rest, ok := strings.Cut(l, "Killed process ")
		if !ok {
			continue
		}
		if i := strings.Index(rest, ")"); i >= 0 {
			out = append(out, rest[:i+1])
		}
	}
	return out
}

// pidsIn reads the PIDs a helper wrote to dir (one file each).
func pidsIn(t *testing.T, dir string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pids []int
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d PIDs written to %s", len(pids), n, dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openDir is a directory that the ordinary user may write to too (the
// helpers' PIDs, contain's report), removed at the end. (t.TempDir's
// parent is root's alone.)
func openDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "vm-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestMemoryEscapee: --memory against an escapee that left COMMAND's
// session by a double fork and setsid, then allocates 400 MiB. The kernel
// holds the limit: its OOM killer ends the tree inside the group (never
// contain or its guard), contain exits 137 and says so once, the report
// names memory.max and a peak at the limit, and the cgroup is left as it
// was.
func TestMemoryEscapee(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir, pids := group(t, w), openDir(t)
			mark := kmsgMark()
			evs := filepath.Join(openDir(t), "events")
			r := containRun(t, w, dir, append([]string{"--memory", "64M", "-t", "60", "--events", evs, "--"}, helperCmd("escapee", pids, "400")...)...)
			// The event stream says the limit the kernel held, and what
			// held it, as the run learns of it at its end.
			if b, _ := os.ReadFile(evs); !strings.Contains(string(b), `"kind":"limit"`) || !strings.Contains(string(b), `"held_by":[{"pid":`) ||
				!strings.Contains(string(b), `"action":"the kernel's OOM killer ended the tree"`) {
				t.Errorf("the events say no kernel-held limit and what held it:\n%s", b)
			}
			if r.code != 137 {
				t.Errorf("exit %d, want 137", r.code)
			}
			if n := strings.Count(r.stderr, "contain: memory limit 64 MiB exceeded:"); n != 1 {
				t.Errorf("the exceeded line said %d times, want once", n)
			}
			if !strings.Contains(r.stderr, "--memory 64 MiB: enforced by cgroup memory.max") {
				t.Errorf("-v does not say that memory.max holds the limit")
			}
			l := limitOf(t, r, "--memory")
			if l.EnforcedBy != "cgroup memory.max" || !l.Exceeded || l.Action != "the kernel's OOM killer ended the tree" {
				t.Errorf("the report's --memory: %+v", l)
			}
			const limit = 64 << 20
			checkOOMKill(t, r, limit, mark, pids)
			// What held it: the OOM killer's victim, the escapee's hog.
			// Root reads it in the kernel's log; the user has the
			// members contain reaped dead of a SIGKILL it had not sent,
			// which may miss the hog (reaped by its parent, or after
			// contain's own kill began): one of the tree, then.
			if len(l.HeldBy) == 0 || l.HeldBy[0].Comm != "vmtest" || l.HeldBy[0].How != "ended by the kernel's OOM killer" ||
				w.name == "root" && (l.HeldBy[0].RSSBytes == nil || *l.HeldBy[0].RSSBytes < 32<<20) {
				t.Errorf("the report's --memory held_by: %+v", l.HeldBy)
			}
			t.Logf("held_by: %s", report.HolderWords(l.HeldBy))
			if !strings.Contains(r.stderr, "; held by: vmtest (PID ") {
				t.Errorf("the exceeded line does not name what held the limit:\n%s", r.stderr)
			}
			checkClean(t, dir)
		})
	}
}

// TestPidsForkBomb: --pids against a fork bomb. The kernel holds it: the
// group never holds more than N tasks, the forks past it fail, the report
// names pids.max and records them.
func TestPidsForkBomb(t *testing.T) {
	const n = 16
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir := group(t, w)
			done := make(chan struct{})
			most := make(chan int)
			// Processes, not pids.current: the kernel adds a fork to
			// the count before it checks it against pids.max, and takes
			// it back when it refuses the fork, so pids.current reads
			// 17 for a moment while a bomb knocks at 16 (once in the
			// session's runs).
			go func() { most <- watchProcs(dir, done) }()
			r := containRun(t, w, dir, "--pids", strconv.Itoa(n), "-t", "3", "--", "sh", "-c", "f() { f & f & }; f 2>/dev/null; exec sleep 30")
			close(done)
			peak := <-most
			if r.code != 124 {
				t.Errorf("exit %d, want 124 (the timeout: the kernel refuses forks, it kills nothing)", r.code)
			}
			if peak > n {
				t.Errorf("%d tasks at once in contain's group, past --pids %d", peak, n)
			}
			if peak < n/2 {
				t.Errorf("at most %d tasks seen in contain's group: the bomb never reached --pids %d", peak, n)
			}
			l := limitOf(t, r, "--pids")
			if l.EnforcedBy != "cgroup pids.max" || !l.Exceeded {
				t.Errorf("the report's --pids: %+v", l)
			}
			if !strings.Contains(r.stderr, "--pids 16: enforced by cgroup pids.max") {
				t.Errorf("-v does not say that pids.max holds the limit")
			}
			t.Logf("the most tasks at once: %d; held_by, as the tree stood when contain read the kernel's count: %+v", peak, l.HeldBy)
			checkClean(t, dir)
		})
	}
}

// TestPidsHeldBy: --pids against a program that starts sleeps and goes
// on when a start is refused: the kernel refuses the forks past pids.max
// (which counts its threads too), and contain, reading its count while
// COMMAND runs, names the program as what started the most processes, in
// the report and the event stream.
func TestPidsHeldBy(t *testing.T) {
	const n = 24
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir := group(t, w)
			evs := filepath.Join(openDir(t), "events")
			r := containRun(t, w, dir, append([]string{"--pids", strconv.Itoa(n), "-t", "2", "--events", evs, "--"}, helperCmd("forker")...)...)
			if r.code != 124 {
				t.Errorf("exit %d, want 124 (the timeout: the kernel refuses forks, it kills nothing)", r.code)
			}
			l := limitOf(t, r, "--pids")
			if l.EnforcedBy != "cgroup pids.max" || !l.Exceeded || len(l.HeldBy) == 0 || l.HeldBy[0].Comm != "vmtest" || l.HeldBy[0].Children < n/3 {
				t.Errorf("the report's --pids: %+v, held_by %s", l, report.HolderWords(l.HeldBy))
			}
			if b, _ := os.ReadFile(evs); !strings.Contains(string(b), `"kind":"limit"`) || !strings.Contains(string(b), `"held_by":[{"pid":`) {
				t.Errorf("the events say no limit held by the loop:\n%s", b)
			}
			checkClean(t, dir)
		})
	}
}

// watchProcs counts the processes of every contain-* group below dir (its
// cgroup.procs: without the pids controller there is no pids.current)
// until done, and returns the most it saw.
func watchProcs(dir string, done <-chan struct{}) int {
	return watchMost(dir, done, func(g string) int {
		b, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
		return len(strings.Fields(string(b)))
	})
}

// watchMost counts, every millisecond or two until done, each contain-*
// group below dir, and returns the most it counted.
func watchMost(dir string, done <-chan struct{}, count func(group string) int) int {
	most := 0
	for {
		select {
		case <-done:
			return most
		default:
		}
		gs, _ := filepath.Glob(filepath.Join(dir, "contain-*[0-9]"))
		for _, g := range gs {
			most = max(most, count(g))
		}
		time.Sleep(time.Millisecond)
	}
}

// checkOOMKill checks a run that a memory limit of limit bytes ended: the
// peak at the limit (the kernel charges in batches, so a few pages past
// it), an OOM kill in the kernel's log since mark, of the tree's
// processes only (never contain or its guard), and nothing of the tree
// (its PIDs in pids) alive.
func checkOOMKill(t *testing.T, r run, limit int64, mark int, pids string) {
	t.Helper()
	if p := r.report.Resources.PeakMemoryBytes; p == nil || int64(*p) > limit+1<<20 || int64(*p) < limit-4<<20 {
		t.Errorf("peak memory %s, want within a few MiB of the limit %d", show(p), limit)
	} else {
		t.Logf("peak memory %d bytes: the limit %+d", *p, int64(*p)-limit)
	}
	kills := oomKills(mark)
	if len(kills) == 0 {
		t.Error("the kernel's log shows no OOM kill")
	}
	for _, k := range kills {
		if !strings.Contains(k, "(vmtest)") {
			t.Errorf("the OOM killer killed %s, which is not of the tree (contain, its guard?)", k)
		}
	}
	if a := testtool.Living(pidsIn(t, pids, 2)); len(a) > 0 {
		t.Errorf("still alive: %v", a)
	}
}

// TestCPUs: --cpus 0.5 holds a spinning process to half a CPU (cpu.max).
// The same spin without the limit, first, says how much of a CPU this VM
// gives at all (its host may be busy): the limited share must stay under
// half a CPU, and come near it.
func TestCPUs(t *testing.T) {
	w := everyone[0]
	share := func(args ...string) float64 {
		dir := group(t, w)
		r := containRun(t, w, dir, append(args, helperCmd("spin", "2s")...)...)
		if r.code != 0 {
			t.Errorf("exit %d, want 0", r.code)
		}
		res := r.report.Resources
		if res.CPUUserSeconds == nil || res.CPUSystemSeconds == nil {
			t.Fatalf("no CPU time in the report: %+v", res)
		}
		checkClean(t, dir)
		if len(args) > 1 {
			if l := limitOf(t, r, "--cpus"); l.EnforcedBy != "cgroup cpu.max" {
				t.Errorf("the report's --cpus: %+v", l)
			}
		}
		return (*res.CPUUserSeconds + *res.CPUSystemSeconds) / 2
	}
	free := share("--")
	held := share("--cpus", "0.5", "--")
	t.Logf("2 s of spinning: %.2f of a CPU without a limit, %.2f with --cpus 0.5", free, held)
	// Where the host is busy, the VM's clock falls behind the CPU time it
	// counts (a lone spinner read 1.25 CPUs beside two busy processes on
	// the host): the limit is judged on the scale of the unlimited run.
	scale := max(1, free)
	if held > 0.6*scale { // the quota is per 100 ms period: a little over in 2 s
		t.Errorf("%.2f of a CPU with --cpus 0.5, where one CPU reads %.2f", held, scale)
	}
	if held < 0.7*min(0.5, free) {
		t.Errorf("%.2f of a CPU with --cpus 0.5, where %.2f is to be had", held, free)
	}
}

// TestCPUTime: --cpu-time ends a spinning tree as the timeout would (124),
// counted exactly by cpu.stat.
func TestCPUTime(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir := group(t, w)
			r := containRun(t, w, dir, append([]string{"--cpu-time", "500ms", "-t", "30", "--"}, helperCmd("spin", "60s")...)...)
			if r.code != 124 {
				t.Errorf("exit %d, want 124", r.code)
			}
			l := limitOf(t, r, "--cpu-time")
			if !strings.HasPrefix(l.EnforcedBy, "cgroup cpu.stat") || !l.Exceeded {
				t.Errorf("the report's --cpu-time: %+v", l)
			}
			if res := r.report.Resources; res.CPUUserSeconds != nil {
				cpu := *res.CPUUserSeconds + *res.CPUSystemSeconds
				if cpu < 0.5 || cpu > 1.5 {
					t.Errorf("the tree used %.2f s of CPU, want just past 0.5", cpu)
				}
			}
			checkClean(t, dir)
		})
	}
}

// TestStrictLimits: --strict-limits runs where the kernel holds every
// limit, and refuses (125, one line, nothing started) where the group
// holds another process, so that the controllers cannot be enabled.
func TestStrictLimits(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir := group(t, w)
			r := containRun(t, w, dir, "--strict-limits", "--memory", "64M", "--pids", "100", "--cpus", "1", "--", "true")
			if r.code != 0 {
				t.Errorf("alone in its cgroup: exit %d, want 0", r.code)
			}
			checkClean(t, dir)

			other := exec.Command("sleep", "60")
			fd, _ := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
			other.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
			defer func() { other.Process.Kill(); other.Wait() }()
			cmd, stderr, _ := startContain(t, w, dir, "--strict-limits", "--memory", "64M", "--", "sh", "-c", "echo started")
			var out bytes.Buffer
			cmd.Stdout = &out
			cmd.Wait()
			t.Logf("beside another process: exit %d\n%s", cmd.ProcessState.ExitCode(), stderr)
			if code := cmd.ProcessState.ExitCode(); code != 125 {
				t.Errorf("beside another process: exit %d, want 125", code)
			}
			if !strings.Contains(stderr.String(), "contain: refusing to run: --memory 64 MiB cannot be enforced by the kernel here") {
				t.Error("no refusal line")
			}
		})
	}
}

// TestCrashWithLimits: contain killed by SIGKILL while a tree with an
// escapee runs under kernel limits. The guard ends the tree, removes the
// group and contain's leaf, and disables the controllers contain enabled.
func TestCrashWithLimits(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir, pids := group(t, w), openDir(t)
			cmd, stderr, _ := startContain(t, w, dir, append([]string{"--memory", "64M", "--pids", "100", "--"}, helperCmd("tree", pids)...)...)
			tree := pidsIn(t, pids, 3)
			cmd.Process.Signal(unix.SIGKILL)
			cmd.Wait()
			t.Logf("contain's stderr before its SIGKILL:\n%s", stderr)
			deadline := time.Now().Add(5 * time.Second)
			for len(testtool.Living(tree)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if a := testtool.Living(tree); len(a) > 0 {
				t.Errorf("alive 5 s after contain's SIGKILL: %v", a)
			}
			checkClean(t, dir)
		})
	}
}

// TestPlainRun: contain run without -v or a report, the run whose crash
// guard is killed as soon as COMMAND is reaped (the run's group removed
// first): nothing is left in or below the test's group, and a stop
// request that comes as COMMAND ends (COMMAND sends contain SIGTERM as it
// exits) does not wait for the removed group to freeze.
func TestPlainRun(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir, tmp := group(t, w), openDir(t)
			for i := 0; i < 20; i++ {
				for _, script := range []string{"exit 0", "kill -TERM $PPID; exit 0"} {
					cmd := containCmd(t, w, dir, tmp, "run", "--", "sh", "-c", script)
					began := time.Now()
					out, err := cmd.CombinedOutput()
					took := time.Since(began)
					if cmd.ProcessState == nil {
						t.Fatalf("contain: %v", err)
					}
					// 0, or COMMAND ended by the SIGTERM contain forwarded:
					// contain then ends itself with it.
					ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
					if !ws.Exited() && ws.Signal() != unix.SIGTERM || ws.Exited() && ws.ExitStatus() != 0 {
						t.Fatalf("round %d, %q: %v\n%s", i, script, cmd.ProcessState, out)
					}
					if took > 2*time.Second {
						t.Fatalf("round %d, %q took %v\n%s", i, script, took, out)
					}
				}
			}
			checkClean(t, dir)
		})
	}
}

// TestLeafMoveAndUndo: while the run lasts, contain and its guard are in
// contain-PID.self and COMMAND in contain-PID, with the controllers
// enabled in the test's group; after it, the group is as it was. When
// another group has appeared beside them, the controllers stay enabled
// (disabling them would take them from it) and -v says so.
func TestLeafMoveAndUndo(t *testing.T) {
	for _, w := range everyone {
		t.Run(w.name, func(t *testing.T) {
			dir, pids := group(t, w), openDir(t)
			cmd, stderr, _ := startContain(t, w, dir, append([]string{"--memory", "64M", "--"}, helperCmd("tree", pids)...)...)
			tree := pidsIn(t, pids, 3)
			self := fmt.Sprintf("contain-%d", cmd.Process.Pid)
			if g := cgroupOf(cmd.Process.Pid); g != "/"+filepath.Base(dir)+"/"+self+".self" {
				t.Errorf("contain is in %s, want its leaf %s.self", g, self)
			}
			for _, p := range tree {
				if g := cgroupOf(p); g != "" && g != "/"+filepath.Base(dir)+"/"+self {
					t.Errorf("%d of the tree is in %s, want %s", p, g, self)
				}
			}
			ctl, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if !strings.Contains(string(ctl), "memory") {
				t.Errorf("memory not enabled in %s during the run: %q", dir, ctl)
			}
			cmd.Process.Signal(unix.SIGTERM)
			cmd.Wait()
			t.Logf("exit %d\n%s", cmd.ProcessState.ExitCode(), stderr)
			checkClean(t, dir)

			// Another group beside contain's at the end.
			cmd, stderr, _ = startContain(t, w, dir, "--memory", "64M", "--", "sleep", "1")
			time.Sleep(300 * time.Millisecond)
			beside := filepath.Join(dir, "beside")
			if err := os.Mkdir(beside, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			t.Logf("with %s: exit %d\n%s", beside, cmd.ProcessState.ExitCode(), stderr)
			ctl, _ = os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if !strings.Contains(string(ctl), "memory") {
				t.Errorf("memory disabled in %s although %s uses it: %q", dir, beside, ctl)
			}
			// No process may go back into a group with controllers
			// enabled: contain's leaf stays, empty once contain has
			// exited, and contain reap removes it.
			leaf := filepath.Join(dir, fmt.Sprintf("contain-%d.self", cmd.Process.Pid))
			if !strings.Contains(stderr.String(), "left memory enabled in "+dir+": beside is below it too; so "+leaf+" stays") {
				t.Error("-v does not say why the controller and the leaf stay")
			}
			if subs := groupsBelow(dir); strings.Join(subs, " ") != "beside "+filepath.Base(leaf) {
				t.Errorf("below %s after the run: %v, want beside and %s", dir, subs, filepath.Base(leaf))
			}
			reap := exec.Command(contain, "reap", "--session", fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid))
			if w.uid != 0 {
				reap.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}}
			}
			out, err := reap.CombinedOutput()
			t.Logf("contain reap: %v\n%s", err, out)
			if subs := groupsBelow(dir); strings.Join(subs, " ") != "beside" {
				t.Errorf("below %s after contain reap: %v, want beside alone", dir, subs)
			}
		})
	}
}

// groupsBelow names the groups right below dir.
func groupsBelow(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var subs []string
	for _, e := range entries {
		if e.IsDir() {
			subs = append(subs, e.Name())
		}
	}
	return subs
}

// show is *p, or "none".
func show(p *uint64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatUint(*p, 10)
}

// cgroupOf is the cgroup v2 path of pid ("": gone).
func cgroupOf(pid int) string {
	g, _ := cgroup.Of(pid)
	return g
}

// TestScopeSocketChecks: where contain would ask systemd for a scope (its
// cgroup holds another process) but the manager's socket is not the
// user's own, or answers nothing, the limit is sampled and the line says
// why: a socket planted by root is refused at once, a silent one holds
// contain no longer than the timeout. (This VM has no systemd: the
// sockets are the test's.)
func TestScopeSocketChecks(t *testing.T) {
	w := everyone[1]
	rundir := fmt.Sprintf("/run/user/%d/systemd", w.uid)
	// As on a real system: /run and /run/user anyone's to pass, the
	// user's runtime directory its own.
	if err := os.MkdirAll(rundir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod("/run", 0o755)
	os.Chmod("/run/user", 0o755)
	os.Chown(filepath.Dir(rundir), w.uid, w.uid)
	os.Chown(rundir, w.uid, w.uid)
	defer os.RemoveAll(filepath.Dir(rundir))
	sock := filepath.Join(rundir, "private")
	for _, c := range []struct {
		name  string
		owner int
		want  string
		most  time.Duration
	}{
		{"planted by root", 0, "is not a socket of this user's", 2 * time.Second},
		{"silent", w.uid, "cannot reach the systemd manager (user 1000)", 15 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(sock)
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			os.Chown(sock, c.owner, c.owner)
			os.Chmod(sock, 0o777)
			go func() {
				if conn, err := ln.Accept(); err == nil {
					defer conn.Close()
					time.Sleep(30 * time.Second) // connected, says nothing
				}
			}()
			dir := group(t, w)
			stop := besideContain(t, dir)
			defer stop()
			r := containRun(t, w, dir, "--memory", "64M", "--", "true")
			if r.code != 0 {
				t.Errorf("exit %d, want 0", r.code)
			}
			if !strings.Contains(r.stderr, "and no systemd scope: ") || !strings.Contains(r.stderr, c.want) {
				t.Errorf("-v does not say why there is no scope (%q)", c.want)
			}
			if l := limitOf(t, r, "--memory"); !strings.HasPrefix(l.EnforcedBy, "sampling") {
				t.Errorf("--memory enforced by %q, want sampling", l.EnforcedBy)
			}
			if r.took > c.most {
				t.Errorf("contain took %v, want at most %v", r.took, c.most)
			}
		})
	}
}
