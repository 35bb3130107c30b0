//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestCrashLeavesCommandItsSignal: when contain is killed, COMMAND gets
// the timeout signal (-s), as from GNU timeout, and is left the grace
// period to act on it; the other processes get SIGTERM, then everything
// SIGKILL. A command that handles only its -s signal (GNU timeout's
// timeout-group.sh case: a shell that traps USR1 and waits for a sleep)
// must run its handler: a SIGTERM would end it first. (The shell runs its
// trap when its foreground sleep ends: a tenth of a second, well inside
// the grace of at most half a second; with sleep 1 the test was a race.)
func TestCrashLeavesCommandItsSignal(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	modes := []struct {
		name string
		o    runOpts
	}{{"self", runOpts{}}, {"tracking", runOpts{env: []string{trackingOnly}}},
		// No Pdeathsig, as on macOS: the guard sends COMMAND its -s signal.
		{"macos", runOpts{env: []string{macOSLayers}}}}
	if os.Geteuid() == 0 {
		modes = append(modes, struct {
			name string
			o    runOpts
		}{"nobody", runOpts{asNobody: true}})
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.o.asNobody {
				testtool.Need(t, "setpriv", "util-linux")
			}
			var bad []string
			for i := range rounds {
				dir := sharedDir(t)
				script := fmt.Sprintf(`D=%s
trap 'echo usr1 > $D/trapped; exit 0' USR1
sleep 300 &
echo $$ > $D/ready
while :; do sleep 0.1; done`, dir)
				cmd := containCmd(m.o, "run", "-v", "-s", "USR1", "-t", "25", "--", "sh", "-c", script)
				var stderr syncBuffer
				cmd.Stderr = &stderr
				cmd.WaitDelay = 5 * time.Second // the guard holds the pipe until it is done
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// contain has told its guard which process is COMMAND
				// (the guard spares it the SIGTERM) before it says it
				// started it; killed before that, the guard cannot know.
				waitFor(t, "COMMAND's start", 10*time.Second, func() bool {
					b, err := os.ReadFile(filepath.Join(dir, "ready"))
					return err == nil && strings.HasSuffix(string(b), "\n") && // written, not only created
						strings.Contains(stderr.String(), "contain: started sh as PID ")
				})
				time.Sleep(time.Duration(i*7%40) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				value := fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid)
				shell := readPID(t, dir, "ready")
				waitFor(t, "the session's end", 5*time.Second, func() bool { return len(tagged(value)) == 0 && !alive(shell) })
				if _, err := os.Stat(filepath.Join(dir, "trapped")); err != nil {
					bad = append(bad, fmt.Sprintf("round %d: COMMAND's USR1 handler never ran (SIGTERM ended it first?)", i))
				}
			}
			if len(bad) > 0 {
				t.Fatalf("%d of %d rounds:\n%s", len(bad), rounds, strings.Join(bad, "\n"))
			}
		})
	}
}
