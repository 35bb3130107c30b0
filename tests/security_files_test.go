//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// asUser runs argv as user (nobody or daemon), through setpriv, and fails
// the test if it fails: what another user plants.
func asUser(t *testing.T, user string, argv ...string) {
	t.Helper()
	group := user
	if user == "nobody" {
		group = "nogroup"
	}
	args := append([]string{"--reuid=" + user, "--regid=" + group, "--clear-groups", "--"}, argv...)
	testtool.Need(t, "setpriv", "util-linux")
	if out, err := exec.Command("setpriv", args...).CombinedOutput(); err != nil {
		t.Fatalf("as %s: %q: %v: %s", user, argv, err, out)
	}
}

// stickyDir is a directory like /tmp: everyone's to write in, sticky.
func stickyDir(t *testing.T) string {
	t.Helper()
	d := sharedDir(t)
	if err := os.Chmod(d, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return d
}

// wantReportAt: path is a regular file of uid's holding a report.
func wantReportAt(t *testing.T, path string, uid int) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Fatalf("%s: not a regular file of uid %d: %v, %v", path, uid, st, err)
	}
	b, _ := os.ReadFile(path)
	var r struct{ Version int }
	if err := json.Unmarshal(b, &r); err != nil || r.Version == 0 {
		t.Errorf("%s holds no report: %v %q", path, err, b)
	}
}

// TestSecurityReportLink: a link that nobody planted at root's --report
// path (in a sticky directory, as /tmp) is replaced by root's report, not
// followed: root's 0600 file it points to keeps its content.
func TestSecurityReportLink(t *testing.T) {
	t.Parallel()
	requireRoot(t, "nobody plants, root runs")
	dir := stickyDir(t)
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rep.json")
	asUser(t, "nobody", "ln", "-s", victim, path)
	res := run(t, runOpts{}, "run", "--report", path, "--", "true")
	wantCode(t, res, 0)
	if b, _ := os.ReadFile(victim); string(b) != "root's\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	wantReportAt(t, path, 0)
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestSecurityReportLinkOtherUser: daemon plants a link to nobody's file
// at the report path nobody then asks for, in a sticky directory: nobody
// may neither follow it nor replace it, so the run is refused (125, one
// line) and nobody's file is kept; in a directory that is not sticky the
// link is replaced.
func TestSecurityReportLinkOtherUser(t *testing.T) {
	t.Parallel()
	requireRoot(t, "daemon plants, nobody runs")
	for _, sticky := range []bool{true, false} {
		t.Run(fmt.Sprintf("sticky=%v", sticky), func(t *testing.T) {
			dir := sharedDir(t)
			if sticky {
				dir = stickyDir(t)
			}
			victim := filepath.Join(dir, "victim")
			asUser(t, "nobody", "sh", "-c", "umask 077; echo nobody\\'s > "+victim)
			path := filepath.Join(dir, "rep.json")
			asUser(t, "daemon", "ln", "-s", victim, path)
			marker := filepath.Join(dir, "ran")
			res := run(t, runOpts{asNobody: true}, "run", "--report", path, "--", "touch", marker)
			if b, _ := os.ReadFile(victim); string(b) != "nobody's\n" {
				t.Errorf("the link's target was written: %q", b)
			}
			if sticky {
				wantCode(t, res, 125)
				wantOneErrorLine(t, res.stderr, "contain: run: --report: the report path "+path+" is a symbolic link of uid 1's in a sticky directory")
				if _, err := os.Stat(marker); err == nil {
					t.Error("COMMAND ran")
				}
				if st, err := os.Lstat(path); err != nil || st.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the link was touched: %v %v", st, err)
				}
				return
			}
			wantCode(t, res, 0)
			wantReportAt(t, path, 65534)
		})
	}
}

// TestSecurityReportStderr: --report /dev/stderr writes to contain's own
// stderr, as root and as nobody: a pipe, and a file stderr is appended to
// (>>), whose earlier content is kept, not truncated.
func TestSecurityReportStderr(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			for _, p := range []string{"/dev/stderr", "/proc/self/fd/2", "/dev/fd/2"} {
				res := run(t, runOpts{asNobody: nobody}, "run", "--report", p, "--", "true")
				wantCode(t, res, 0)
				if !strings.HasPrefix(res.stderr, "{") || !strings.Contains(res.stderr, `"written_by": "contain"`) {
					t.Errorf("%s: stderr %q", p, res.stderr)
				}
			}
			dir := sharedDir(t)
			log := filepath.Join(dir, "log")
			if err := os.WriteFile(log, []byte("before\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chmod(log, 0o666)
			argv := []string{"sh", "-c", `exec "$0" run --report /dev/stderr -- true 2>>"$1"`, bin, log}
			if nobody {
				argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
			}
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			b, _ := os.ReadFile(log)
			if !strings.HasPrefix(string(b), "before\n{") {
				t.Errorf("stderr's file now holds %q", b)
			}
			if st, err := os.Lstat("/dev/stderr"); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("/dev/stderr was replaced: %v %v", st, err)
			}
		})
	}
}

// TestSecurityCPUsRange: --cpus above the CPUs contain may run on, and
// NaN, infinities, 0 and negatives, are refused before COMMAND runs (125,
// one line, Docker's range); the CPU count itself is taken.
func TestSecurityCPUsRange(t *testing.T) {
	t.Parallel()
	n := runtime.NumCPU()
	dir := sharedDir(t)
	marker := filepath.Join(dir, "ran")
	for _, v := range []string{"1e300", strconv.Itoa(n + 1), strconv.Itoa(n*100+1) + "%", "1e19"} {
		res := run(t, runOpts{}, "run", "--cpus", v, "--", "touch", marker)
		wantCode(t, res, 125)
		wantOneErrorLine(t, res.stderr, fmt.Sprintf("contain: run: --cpus: CPU share %q is more than this machine has: the range of CPUs is from 0.01 to %d", v, n))
	}
	for _, v := range []string{"NaN", "inf", "-inf", "+Inf", "-1", "0", "0%"} {
		res := run(t, runOpts{}, "run", "--cpus", v, "--", "touch", marker)
		wantCode(t, res, 125)
		wantOneErrorLine(t, res.stderr, "contain: run: --cpus: ")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("COMMAND ran")
	}
	res := run(t, runOpts{}, "run", "--cpus", strconv.Itoa(n), "--", "true")
	wantCode(t, res, 0)
}

// TestSecurityRegistrySquatted: another user made $TMPDIR/contain-UID first
// (nobody for root, daemon for nobody): contain run refuses it, says so in
// one line without -v, and keeps its registry in a directory of its own,
// contain-UID.RANDOM, 0700, while COMMAND runs; nothing is written in the
// squatted directory.
func TestSecurityRegistrySquatted(t *testing.T) {
	t.Parallel()
	requireRoot(t, "two users")
	for _, c := range []struct {
		planter string
		nobody  bool
	}{{"nobody", false}, {"daemon", true}} {
		t.Run(c.planter+" plants", func(t *testing.T) {
			base := stickyDir(t)
			uid := 0
			env := []string{"TMPDIR=" + base, "XDG_RUNTIME_DIR=", "CONTAIN_DISABLE=cgroup"}
			if c.nobody {
				uid = 65534
			}
			squat := filepath.Join(base, fmt.Sprintf("contain-%d", uid))
			asUser(t, c.planter, "mkdir", "-m", "0755", squat)
			listing := filepath.Join(base, "listing")
			res := run(t, runOpts{asNobody: c.nobody, env: env}, "run", "--", "sh", "-c",
				// contain makes the registry once COMMAND runs: wait for it.
				`for i in $(seq 100); do ls -d "$0".*/session.* > "$1" 2>/dev/null && exit 0; sleep 0.05; done; exit 1`, squat, listing)
			wantCode(t, res, 0)
			planterUID := map[string]int{"nobody": 65534, "daemon": 1}[c.planter]
			wantOneErrorLine(t, res.stderr, fmt.Sprintf("contain: registry: %s: refused: owned by uid %d, not by this user (uid %d); the registry is kept in %s.", squat, planterUID, uid, squat))
			b, _ := os.ReadFile(listing)
			reg := strings.TrimSpace(string(b))
			dir := filepath.Dir(reg)
			if !strings.HasPrefix(dir, squat+".") || !strings.Contains(res.stderr, "kept in "+dir+"\n") {
				t.Fatalf("COMMAND saw %q; stderr %q", b, res.stderr)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(dir, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o777 != 0o700 || int(st.Uid) != uid {
				t.Errorf("%s: mode %o, uid %d: %v", dir, st.Mode, st.Uid, err)
			}
			if _, err := os.Stat(reg); err == nil {
				t.Error("the registry was not removed at the end")
			}
			if ents, _ := os.ReadDir(squat); len(ents) != 0 {
				t.Errorf("written in the squatted directory: %v", ents)
			}
		})
	}
}

// TestSecurityRegistryForeignFallback: a directory named as a fallback,
// contain-65534.*, that daemon made, with a registry naming nobody's
// process, is not read by nobody's reap: the process is left alone.
func TestSecurityRegistryForeignFallback(t *testing.T) {
	t.Parallel()
	requireRoot(t, "two users")
	base := stickyDir(t)
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	victim := startAs(t, true, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "300")
	killOnCleanup(t, victim)
	evil := filepath.Join(base, "contain-65534.evil")
	asUser(t, "daemon", "mkdir", "-m", "0755", evil)
	content := fmt.Sprintf("contain registry 1\nsession %s 4242\ncommand %d %d\n", value, victim, startTime(t, victim))
	_, pidText, _ := strings.Cut(value, ":")
	asUser(t, "daemon", "sh", "-c", `umask 022; printf '%s' "$1" > "$0"`, filepath.Join(evil, "session."+pidText+".4242"), content)
	res := run(t, runOpts{asNobody: true, env: []string{"TMPDIR=" + base, "XDG_RUNTIME_DIR="}}, "reap", "-o", tool)
	wantCode(t, res, 0)
	if strings.Contains(res.stderr, "evil") {
		t.Errorf("stderr %q", res.stderr)
	}
	if !alive(victim) {
		t.Error("reap used a registry of another user's")
	}
}
