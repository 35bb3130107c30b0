package reap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/session"
)

// startProc starts argv with env, waits for it when it ends, and kills it
// when the test ends.
func startProc(t *testing.T, env []string, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd.Process.Pid
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// writeRegistry writes a registry file as contain run would, for the
// session value of contain origin, in $XDG_RUNTIME_DIR/contain (the
// tests set XDG_RUNTIME_DIR), named as package registry names it.
func writeRegistry(t *testing.T, value string, origin proc.ID, members ...proc.ID) string {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "contain")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "contain registry 1\nsession %s %d\n", value, origin.Start)
	for i, m := range members {
		kind := "member"
		if i == 0 {
			kind = "command"
		}
		fmt.Fprintf(&b, "%s %d %d\n", kind, m.PID, m.Start)
	}
	name := fmt.Sprintf("session.%d.%d", origin.PID, origin.Start)
	if ns := proc.NSName(); ns != "" {
		name += "." + ns
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func idOf(t *testing.T, pid int) proc.ID {
	t.Helper()
	st, err := proc.ReadStat(pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	return proc.ID{PID: pid, Start: st.Start}
}

func overwritten(pid int) bool {
	env, err := proc.FS.Environ(pid, nil)
	return err == nil && procfs.Overwritten(env)
}

// TestReapRegistered: the registry of a session whose contain is gone
// finds its processes that the tag does not (a cleared environment, one
// written over by a title, real redis-server daemonized when installed,
// and what they started), and reap ends them through their pins; a
// recycled PID (another start time) and the processes of a registry whose
// contain still runs are left alone; the spent registry is removed.
func TestReapRegistered(t *testing.T) {
	testtool.Need(t, "perl", "perl-base") // a title over the environment, as redis writes it
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	tool := fmt.Sprintf("REG%x", time.Now().UnixNano())
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	ended := proc.ID{PID: pidMax + 7, Start: 12345} // contain run, ended
	value := fmt.Sprintf("%s:%d", tool, ended.PID)
	tagged := []string{"PATH=" + os.Getenv("PATH"), "RUNNING_PROCESS_ORIGINATOR=" + value}

	cleared := startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "30")
	titled := startProc(t, tagged, "perl", "-e", `$0 = "registry test: a title"; sleep 30`)
	waitUntil(t, "perl to write its title", func() bool { return overwritten(titled) })
	// A shell listed, its child not: found by parentage.
	dir := t.TempDir()
	shell := startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sh", "-c", "sleep 30 & echo $! > "+dir+"/child; wait")
	var child int
	waitUntil(t, "the child", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child > 0
	})
	t.Cleanup(func() { unix.Kill(child, unix.SIGKILL) })
	members := []proc.ID{idOf(t, cleared), idOf(t, titled), idOf(t, shell)}
	var redis int
	if _, err := exec.LookPath("redis-server"); err == nil {
		cmd := exec.Command("redis-server", "--daemonize", "yes", "--port", "0", "--unixsocket", dir+"/r.sock",
			"--pidfile", dir+"/r.pid", "--dir", dir, "--logfile", "/dev/null", "--save", "")
		cmd.Env = tagged
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("redis-server: %v: %s", err, out)
		}
		waitUntil(t, "redis-server's PID file", func() bool {
			b, _ := os.ReadFile(dir + "/r.pid")
			redis, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return redis > 0
		})
		t.Cleanup(func() { unix.Kill(redis, unix.SIGKILL) })
		waitUntil(t, "redis-server to write its title", func() bool { return overwritten(redis) })
		members = append(members, idOf(t, redis))
	} else {
		t.Log("redis-server is not installed: the real daemon is left out")
	}
	// A recycled PID: listed with another start time.
	stranger := startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "30")
	members = append(members, proc.ID{PID: stranger, Start: idOf(t, stranger).Start - 1})
	orphanedPath := writeRegistry(t, value, ended, members...)
	// A registry whose contain runs: never used.
	running := idOf(t, startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "30"))
	spared := startProc(t, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "30")
	liveValue := fmt.Sprintf("%s:%d", tool, running.PID)
	livePath := writeRegistry(t, liveValue, running, idOf(t, spared))

	o := session.Options{Filter: session.Filter{Tools: []string{tool}}}
	chosen, err := Choose(o, Me())
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{cleared: true, titled: true, shell: true, child: true}
	if redis > 0 {
		want[redis] = true
	}
	got := map[int]bool{}
	for _, c := range chosen {
		if c.Skip != "" || c.Session != value || !c.Registered {
			t.Errorf("chose %d (%s) of %s: skip %q, registered %v", c.PID, c.Comm, c.Session, c.Skip, c.Registered)
		}
		got[c.PID] = true
	}
	for pid := range want {
		if !got[pid] {
			t.Errorf("%d is not chosen", pid)
		}
	}
	for pid := range got {
		if !want[pid] {
			t.Errorf("%d (%v) is chosen", pid, got)
		}
	}
	if redis > 0 {
		for _, c := range chosen {
			if c.PID == redis && (len(c.Argv) != 1 || !strings.HasPrefix(c.Argv[0], "redis-server ")) {
				t.Errorf("redis-server's argv: %q, want its title alone", c.Argv)
			}
		}
	}
	rescan := func() ([]session.Choice, error) {
		o := o
		o.Filter = session.Filter{Values: []string{value}}
		return Choose(o, Me())
	}
	ids := map[int]proc.ID{}
	for pid := range want {
		ids[pid] = idOf(t, pid)
	}
	r := Reap(Plan{Targets: chosen, Rescan: rescan, Signal: unix.SIGTERM, Grace: time.Second})
	for _, p := range r.Processes {
		if p.Alive || !want[p.PID] {
			t.Errorf("%d (%s): %s", p.PID, p.Comm, p.Result())
		}
	}
	for pid := range want {
		waitUntil(t, fmt.Sprintf("%d to end", pid), func() bool { return !proc.Lives(ids[pid]) })
	}
	for _, pid := range []int{stranger, spared} {
		if st, err := proc.ReadStat(pid, nil); err != nil || st.Zombie() || st.State == 'T' {
			t.Errorf("%d, left alone, is %c (%v)", pid, st.State, err)
		}
	}
	// At least the spent one: /tmp/contain-UID may hold the spent
	// registries of other tests' runs too.
	if n, err := registry.PruneRegistries(); n < 1 || err != nil {
		t.Errorf("PruneRegistries removed %d (%v), want the spent one", n, err)
	}
	if _, err := os.Stat(orphanedPath); err == nil {
		// The stranger runs, listed with another start time: not the
		// session's, so nothing of it is left.
		t.Error("the spent registry is still there")
	}
	if _, err := os.Stat(livePath); err != nil {
		t.Errorf("the registry of a running contain was removed: %v", err)
	}
}
