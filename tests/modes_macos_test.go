//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/contain-cli/contain/report"
)

// titled is testdata/titled, a daemon that writes its title over its
// environment as redis and nginx do, built once.
var titledFix struct {
	once sync.Once
	path string
	err  error
}

func titledBin(t *testing.T) string {
	t.Helper()
	titledFix.once.Do(func() {
		dir, err := os.MkdirTemp("", "contain-titled-")
		if err != nil {
			titledFix.err = err
			return
		}
		os.Chmod(dir, 0o755)
		titledFix.path = filepath.Join(dir, "titled")
		out, err := exec.Command("go", "build", "-o", titledFix.path, "./testdata/titled").CombinedOutput()
		if err != nil {
			titledFix.err = fmt.Errorf("building testdata/titled: %v\n%s", err, out)
		}
	})
	if titledFix.err != nil {
		t.Fatal(titledFix.err)
	}
	return titledFix.path
}

// TestModesMacOSUntold: with macOS's layers (CONTAIN_DISABLE=macos), a
// process of contain's user that starts during the run, re-parented to
// PID 1, whose environment a title has written over, cannot be told to
// be the session's or anyone's: contain does not end it, and says how
// many such processes it saw (-v, the report's untold[], the done line)
// rather than "no leftovers" alone. An orphan whose environment can be
// read (and shows no tag) is told: not counted.
func TestModesMacOSUntold(t *testing.T) {
	modes := []runOpts{{env: []string{macOSLayers}}}
	if os.Geteuid() == 0 {
		modes = append(modes, runOpts{env: []string{macOSLayers}, asNobody: true})
	}
	bin := titledBin(t)
	for _, o := range modes {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			rep := filepath.Join(dir, "report.json")
			script := fmt.Sprintf(`D=%s
echo $$ > $D/ready
while [ ! -f $D/go ]; do sleep 0.01; done`, dir)
			_, wait := startContain(t, o, "run", "-v", "--report", rep, "--", "sh", "-c", script)
			readPID(t, dir, "ready")
			// Started beside the session, as its user, after COMMAND: one
			// titled daemon, one plain orphan.
			outside := func(argv ...string) {
				if o.asNobody {
					argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
				}
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%q: %v\n%s", argv, err, out)
				}
			}
			outside(bin, "daemon", filepath.Join(dir, "titled"))
			outside("sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > "+filepath.Join(dir, "plain"))
			daemon, plain := readPID(t, dir, "titled"), readPID(t, dir, "plain")
			killOnCleanup(t, daemon)
			killOnCleanup(t, plain)
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			res := wait()
			wantCode(t, res, 0)
			if !alive(daemon) || !alive(plain) {
				t.Errorf("contain ended a process it could not tell to be the session's (daemon alive %v, plain alive %v)", alive(daemon), alive(plain))
			}
			r := readReport(t, rep)
			var pids []int
			for _, u := range r.Untold {
				pids = append(pids, u.PID)
				if u.PID == daemon && !strings.Contains(u.Why, "written over") {
					t.Errorf("untold %d: why %q", u.PID, u.Why)
				}
			}
			if len(pids) != 1 || pids[0] != daemon {
				t.Errorf("untold = %v, want [%d] (the titled daemon, not the plain orphan %d)", pids, daemon, plain)
			}
			if want := fmt.Sprintf("could not tell %d (titled): its environment is written over", daemon); !strings.Contains(res.stderr, want) {
				t.Errorf("-v does not say %q:\n%s", want, res.stderr)
			}
			if s := report.Summary(&r); !strings.Contains(s, "no leftovers, 1 started during the run that contain could not tell") {
				t.Errorf("the done line: %s", s)
			}
			syscall.Kill(daemon, syscall.SIGKILL)
			syscall.Kill(plain, syscall.SIGKILL)
		})
	}
}
