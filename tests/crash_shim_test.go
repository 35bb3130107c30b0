//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/report"
)

// TestCrashShimAlone: the shim (a subreaper above COMMAND, where there is
// no cgroup) is killed with SIGKILL while COMMAND runs a background job and
// a setsid escapee, with contain's own subreaper off. That is a
// containment failure: contain says so on stderr (one line, without -v)
// and in the report, and ends what its tracking, the tag and COMMAND's
// process group still find: nothing of the session is left when it
// returns. (Before, contain took the shim's end for the session's, said
// "no leftovers" and returned in 3 ms, leaving every process alive.)
func TestCrashShimAlone(t *testing.T) {
	modes := []runOpts{{env: []string{"CONTAIN_DISABLE=cgroup,subreaper"}}}
	if os.Geteuid() == 0 {
		modes = append(modes, runOpts{env: []string{"CONTAIN_DISABLE=cgroup,subreaper"}, asNobody: true})
	}
	for _, o := range modes {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			rep := filepath.Join(dir, "report.json")
			script := escapeeTree(dir, "background", "setsid") + "sleep 0.3 # the scans see both\necho $$ > $D/ready\nwait\n"
			cmd, wait := startContain(t, o, "run", "--report", rep, "--", "sh", "-c", script)
			pids := map[string]int{}
			for _, k := range []string{"background", "setsid", "ready"} {
				pids[k] = readPID(t, dir, k)
				killOnCleanup(t, pids[k])
			}
			shim := ppidOf(pids["ready"])
			if !strings.Contains(cmdlineOf(shim), "__shim") {
				t.Fatalf("COMMAND's parent %d is no shim: %q", shim, cmdlineOf(shim))
			}
			if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			res := wait()
			_ = cmd
			for k, pid := range pids {
				if alive(pid) {
					t.Errorf("%s %d is still there after contain returned", k, pid)
				}
			}
			if left := tagged(fmt.Sprintf("CONTAIN:%d", res.pid)); len(left) > 0 {
				t.Errorf("processes tagged with this session are left: %v", left)
			}
			want := fmt.Sprintf("contain: the shim (PID %d) ended (killed by SIGKILL) before COMMAND did: ", shim)
			if n := strings.Count(res.stderr, want); n != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%s", want, n, res.stderr)
			}
			r := readReport(t, rep)
			if !strings.HasPrefix(r.ContainmentFailure, strings.TrimPrefix(want, "contain: ")) {
				t.Errorf("report's containment_failure = %q", r.ContainmentFailure)
			}
			ended := map[int]bool{}
			for _, l := range r.Leftovers {
				ended[l.PID] = true
			}
			for _, k := range []string{"background", "setsid"} {
				if !ended[pids[k]] {
					t.Errorf("the report's leftovers lack %s %d: %+v", k, pids[k], r.Leftovers)
				}
			}
			if s := report.Summary(&r); !strings.Contains(s, "containment failed: the shim") {
				t.Errorf("the done line does not say it: %s", s)
			}
		})
	}
}

// ppidOf reads pid's parent from /proc (0 when it cannot).
func ppidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
