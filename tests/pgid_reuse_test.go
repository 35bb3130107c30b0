//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

var pidreuseFix builtOnce

// TestReusedGroupIDJoinsNothing: where tracking is the layer (macOS's
// layers, CONTAIN_DISABLE=macos), a run's setsid escapee E, leader of
// group and session G, is seen by the scans and ends. Before the next
// scan nobody takes PID G (pid_max is small in a PID namespace of the
// test's: testdata/pidreuse forks until G comes round), calls setsid,
// starts a sleep and exits: the sleep is in a group and session of ID G
// whose leader is gone. It is no member: root's run ends without
// signalling it. Before the fix the tracker kept G as the run's while a
// scan showed a process in it, took the sleep "by process group", and the
// close sent it SIGTERM. (pid_max is per PID namespace from Linux 6.14;
// the test is skipped where the namespace cannot set its own.)
func TestReusedGroupIDJoinsNothing(t *testing.T) {
	t.Parallel()
	requireRoot(t, "a PID namespace, and processes of two users")
	testtool.Need(t, "setpriv", "util-linux")
	testtool.Need(t, "unshare", "util-linux")
	testtool.Need(t, "mkfifo", "coreutils")
	helper := pidreuseFix.path(t, "pidreuse", ".", "./testdata/pidreuse")
	nb := "setpriv --reuid=nobody --regid=nogroup --clear-groups --"
	// The namespace's script: a small pid_max of its own (refused: "nsmax"),
	// PIDs used up to the range that comes round (300 and up), the helper
	// as nobody, then root's run. Nothing forks between the helper's last
	// fork and its taking of PID G: the run's shells wait in read and wait.
	const pidMax = 500
	script := func(dir string) string {
		return fmt.Sprintf(`
if ! echo %[5]d > /proc/sys/kernel/pid_max 2>/dev/null || [ "$(cat /proc/sys/kernel/pid_max)" != %[5]d ]; then echo nsmax > %[1]s/result; exit 0; fi
i=0; while [ $i -lt 320 ]; do /bin/true; i=$((i+1)); done
mkfifo -m 666 %[1]s/fifo %[1]s/end
%[2]s %[3]s %[1]s 2> %[1]s/helper.err &
helper=$!
CONTAIN_DISABLE=macos %[4]s run -v -g 0.5 -- sh -c 'setsid sh -c "echo \$\$ > %[1]s/g; read x < %[1]s/fifo" & e=$!; wait $e; read y < %[1]s/end' > %[1]s/run.out 2> %[1]s/run.err &
run=$!
wait $helper
sleep 0.6
echo end > %[1]s/end
wait $run; echo $? > %[1]s/code
c=$(cat %[1]s/c)
case "$c" in missed*|"") echo "$c" > %[1]s/result; exit 0;; esac
state=$(cut -d' ' -f3 /proc/$c/stat 2>/dev/null)
echo "${state:-gone}" > %[1]s/result
kill -9 $c 2> /dev/null
exit 0
`, dir, nb, helper, bin, pidMax)
	}
	for attempt := 1; ; attempt++ {
		dir := sharedDir(t)
		cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", script(dir))
		cmd.Env = withoutTag(os.Environ())
		done := make(chan error, 1)
		var out []byte
		go func() {
			var err error
			out, err = cmd.CombinedOutput()
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("unshare: %v\n%s", err, out)
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("the namespace's script did not finish")
		}
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			return strings.TrimSpace(string(b))
		}
		result := read("result")
		switch {
		case result == "nsmax":
			t.Skip("a PID namespace cannot set its own pid_max here (before Linux 6.14)")
		case strings.HasPrefix(result, "missed") && attempt < 5:
			t.Logf("attempt %d: PID G went to another process (%s); again", attempt, result)
			continue
		case strings.HasPrefix(result, "missed"):
			t.Skipf("PID G never came round to the helper in %d attempts", attempt)
		case result == "":
			t.Fatalf("no result; helper: %s\nrun: %s", read("helper.err"), read("run.err"))
		}
		if result != "S" {
			t.Errorf("nobody's sleep in the reused group %s is %s after root's run ended, want S (alive, not signalled)\nrun -v:\n%s", read("g"), result, read("run.err"))
		}
		if read("code") != "0" {
			t.Errorf("contain run exited %s, want 0\n%s", read("code"), read("run.err"))
		}
		return
	}
}
