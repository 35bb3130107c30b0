package reap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
)

// TestUnsureNotAfterCleanEnd: a registry a clean end kept for its spared
// daemons (its end line) lists the whole session: reap does not name, as
// a process it could not tell, an orphan of the user with its title over
// its environment that started during the run. Without the end line (the
// run was killed) it does.
func TestUnsureNotAfterCleanEnd(t *testing.T) {
	testtool.Need(t, "perl", "perl-base") // a title over the environment, as redis writes it
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	me := idOf(t, os.Getpid())
	origin := proc.ID{PID: pidMax + 9, Start: me.Start} // contain run, ended
	value := fmt.Sprintf("UNSURE%x:%d", time.Now().UnixNano(), origin.PID)
	dir := t.TempDir()
	startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sh", "-c",
		`perl -e '$0 = "unsure test: a title"; sleep 30' & echo $! > `+dir+`/orphan`)
	var orphan int
	waitUntil(t, "the orphan", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "orphan"))
		orphan, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return orphan > 0 && overwritten(orphan)
	})
	t.Cleanup(func() { unix.Kill(orphan, unix.SIGKILL) })
	waitUntil(t, "the orphan to lose its parent", func() bool {
		st, err := proc.ReadStat(orphan, nil)
		return err == nil && st.PPID != os.Getpid()
	})
	if st, _ := proc.ReadStat(orphan, nil); st.PPID != 1 {
		t.Skipf("orphans go to %d here, a subreaper, not PID 1", st.PPID)
	}
	path := writeRegistry(t, value, origin, proc.ID{PID: pidMax + 10, Start: me.Start})
	want := func(v string) bool { return v == value }
	names := func() bool {
		us, _ := FindUnsure(want, nil)
		for _, u := range us {
			if u.PID == orphan {
				return true
			}
		}
		return false
	}
	if !names() {
		t.Fatalf("the registry of a killed run: orphan %d not named", orphan)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("end\n")
	f.Close()
	if names() {
		t.Errorf("a clean end's registry: orphan %d named as a process reap could not tell", orphan)
	}
}
