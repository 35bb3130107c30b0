//go:build linux || darwin

package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
)

// TestRunTrackingAlone runs Run itself with nothing but the portable core
// (on Linux, cgroup and subreaper turned off): every escapee is gone when
// it returns, the one that cleared its environment and left COMMAND's
// process group and session included. On macOS it is contain run as it
// is there (the workflow's runners run it; this machine cannot).
func TestRunTrackingAlone(t *testing.T) {
	t.Setenv("CONTAIN_DISABLE", "cgroup,subreaper")
	testtool.Need(t, "perl", "perl-base")
	dir := t.TempDir()
	// setsid(1) is not on macOS; perl is, on both.
	const setsid = `perl -MPOSIX -e 'POSIX::setsid() or die; exec @ARGV or die' `
	script := fmt.Sprintf(`
D=%s
sleep 300 & echo $! > $D/background
`+setsid+`sh -c 'echo $$ > '$D'/setsid; exec sleep 300' &
sh -c 'sleep 300 & echo $! > '$D'/doublefork' &
`+setsid+`env -i /bin/sh -c 'sleep 300 & echo $! > '$D'/cleared; sleep 0.5' &
sh -c 'trap "" TERM; echo $$ > '$D'/ignoresterm; exec sleep 300' &
for f in background setsid doublefork cleared ignoresterm; do
	while [ ! -s $D/$f ]; do sleep 0.01; done
done
sleep 0.5 # scans see every escapee while COMMAND is their ancestor
`, dir)
	value := "TRACKTEST:" + strconv.Itoa(os.Getpid())
	var log strings.Builder
	res, err := Run(Options{
		Args: []string{"/bin/sh", "-c", script}, Env: append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+value),
		Tag: value, Signal: syscall.SIGTERM, Grace: 200 * time.Millisecond,
		Log: func(format string, a ...any) { fmt.Fprintf(&log, format+"\n", a...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("contain's log:\n%s", log.String())
	if !res.Exited || res.Code != 0 {
		t.Errorf("result %+v, want exit 0", res)
	}
	procs, err := proc.Scan()
	if err != nil {
		t.Fatal(err)
	}
	live := map[int]bool{}
	for _, p := range procs {
		live[p.PID] = !p.Zombie
	}
	for _, kind := range []string{"background", "setsid", "doublefork", "cleared", "ignoresterm"} {
		b, err := os.ReadFile(filepath.Join(dir, kind))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Errorf("%s: no PID recorded (%v)", kind, err)
			continue
		}
		if live[pid] {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s %d survived the run", kind, pid)
		}
	}
	if !strings.Contains(log.String(), "containment: process group") || !strings.Contains(log.String(), "tracking") {
		t.Errorf("the log does not name the tracking as the containment")
	}
}
