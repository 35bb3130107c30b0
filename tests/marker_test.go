//go:build linux

package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestMarkerFindsWhatDroppedEveryLink: as an ordinary user (no cgroup),
// COMMAND starts, a second after it started (between two of the scans),
// a process that drops every link to the session: env -i (no tag),
// setsid (no process group), its parent ended (no lineage); 30 ms later
// contain, its guard and its shim are all killed. contain reap --session
// then finds it by the session's marker (package marker: the pipe COMMAND
// inherited at descriptor 205, whose identity the registry keeps), ends it
// and exits 0. Before the marker, reap named it as a process it could not
// tell, exited 1 and left it running (2 rounds of 3 by hand; the other
// killed sh before it forked). With the shim, and with macOS's layers
// (contain starts COMMAND itself). Rounds: CONTAIN_MARKER_ROUNDS (3).
func TestMarkerFindsWhatDroppedEveryLink(t *testing.T) {
	requireRoot(t, "runs contain as users of its own")
	testtool.Need(t, "setpriv", "util-linux")
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("CONTAIN_MARKER_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	base := 230000 + os.Getpid()%1000*20
	for mi, mode := range []string{"shim", "macos"} {
		uid := base + mi*(rounds+1)
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for i := range rounds {
				uid++
				if msg := markerRound(t, mode, uid); msg != "" {
					t.Errorf("round %d: %s", i, msg)
				}
			}
		})
	}
}

// markerRound is one round as user uid: "" or what went wrong.
func markerRound(t *testing.T, mode string, uid int) string {
	t.Helper()
	c := crashAllAs(t, mode, uid, func(work string) string {
		return fmt.Sprintf("sleep 1; env -i setsid sh -c 'echo $$ > %s/escapee; exec env -i sleep 300' & sleep 300", work)
	}, "escapee")
	escapee := c.pid
	if !alive(escapee) {
		return "the escapee did not outlive contain, its guard and its shim: nothing to test"
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", escapee)); err != nil || len(b) != 0 {
		return fmt.Sprintf("the escapee's environment is not empty (%q, %v)", b, err)
	}
	out, errOut, code := c.reap("--session", fmt.Sprintf("CONTAIN:%d", c.contain), "-g", "0.5")
	gone := !alive(escapee)
	if !gone {
		time.Sleep(600 * time.Millisecond)
		gone = !alive(escapee)
	}
	if code != 0 || !gone || !strings.Contains(out, strconv.Itoa(escapee)) {
		return fmt.Sprintf("reap --session: status %d, escapee %d gone %v\n%s%s\ncontain's stderr:\n%s", code, escapee, gone, out, errOut, c.stderr())
	}
	return ""
}
