//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestRegistryCrashUnseenDaemon: COMMAND starts a daemon a second after it
// started (when the scans come 200 ms apart), which forks, lets its parent
// exit, calls setsid and writes its title over its environment (no tag to
// read); 30 ms later contain, its guard and its shim are all killed. Then
// contain reap --session, as the same user:
//
//   - with the shim (an ordinary user): the daemon was the shim's child
//     (the nearest subreaper) within microseconds, and contain, which reads
//     the shim's children every 5 ms, wrote it to the registry at once:
//     reap ends it and exits 0. (Before, only the scans wrote the
//     registry, and reap missed such a daemon and exited 0.)
//   - with macOS's layers (no shim): nothing may have seen it; reap then
//     either ends it (a scan saw it) or names it on stderr as a process it
//     could not tell and exits 1 — never 0 with the daemon alive.
//
// Each runs as a user of the test's own, so that no other test's process
// is taken for one reap could not tell.
func TestRegistryCrashUnseenDaemon(t *testing.T) {
	requireRoot(t, "runs contain as a user of its own")
	testtool.Need(t, "setpriv", "util-linux")
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("CONTAIN_REGISTRY_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	daemon := titledBin(t)
	base := 200000 + os.Getpid()%1000*20
	for mi, mode := range []string{"shim", "macos"} {
		uid := base + mi*(rounds+1) // a user per round, none shared
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each round a user of its own: neither sees the other's
			var bad []string
			ended, told := 0, 0
			for i := range rounds {
				uid++
				msg, how := unseenDaemonRound(t, mode, uid, daemon)
				switch {
				case msg != "":
					bad = append(bad, fmt.Sprintf("round %d: %s", i, msg))
				case how == "ended":
					ended++
				default:
					told++
				}
			}
			t.Logf("%s: %d rounds, reap ended the daemon in %d, named it and exited 1 in %d", mode, rounds, ended, told)
			if len(bad) > 0 {
				t.Fatalf("%s", strings.Join(bad, "\n"))
			}
		})
	}
}

// unseenDaemonRound is one round: "" and how reap dealt with the daemon
// ("ended", "told"), or what went wrong.
func unseenDaemonRound(t *testing.T, mode string, uid int, daemon string) (string, string) {
	t.Helper()
	c := crashAllAs(t, mode, uid, func(work string) string {
		return fmt.Sprintf("sleep 1; %s daemon %s/titled >/dev/null 2>&1; sleep 300", daemon, work)
	}, "titled")
	pid := c.pid
	if !alive(pid) {
		return "the daemon did not outlive contain, its guard and its shim: nothing to test", ""
	}
	out, errOut, code := c.reap("--session", fmt.Sprintf("CONTAIN:%d", c.contain), "-g", "0.5")
	gone := !alive(pid)
	if !gone {
		time.Sleep(600 * time.Millisecond)
		gone = !alive(pid)
	}
	named := strings.Contains(errOut, fmt.Sprintf("contain: reap: %d (titled) started after session CONTAIN:%d's contain run", pid, c.contain))
	switch {
	case gone && code == 0:
		return "", "ended"
	case !gone && code == 1 && named && mode == "macos":
		return "", "told"
	}
	return fmt.Sprintf("reap exited %d, the daemon %d alive: %v, named: %v\nstdout: %s\nstderr: %s", code, pid, !gone, named, out, errOut), ""
}

// crashed is a session whose contain, crash guard and shim were all
// killed (crashAllAs): pid is the process the round watches, contain
// contain's PID, reap runs contain reap as the round's user.
type crashed struct {
	pid, contain int
	stderr       func() string
	reap         func(args ...string) (out, errOut string, code int)
}

// crashAllAs runs contain run -v -- sh -c SCRIPT as user uid, with
// directories of the round's own (script(work) is SCRIPT; mode "macos":
// macOS's layers), waits for the PID the script writes to work/name,
// and 30 ms later SIGKILLs contain, its crash guard and its shim (the
// shim required in mode "shim"), then leaves 100 ms for what follows.
func crashAllAs(t *testing.T, mode string, uid int, script func(work string) string, name string) crashed {
	t.Helper()
	xdg := sharedDir(t)
	work := sharedDir(t)
	for _, d := range []string{xdg, work} {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(xdg, 0o700)
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+xdg, "HOME="+work)
	if mode == "macos" {
		env = append(env, macOSLayers)
	}
	as := []string{"setpriv", "--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "--"}
	cmd := exec.Command(as[0], append(as[1:], bin, "run", "-v", "--", "sh", "-c", script(work))...)
	cmd.Env = env
	// A file, not a pipe: a survivor holding a pipe would hold Wait.
	errFile, err := os.Create(filepath.Join(sharedDir(t), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	stderr := func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := readPID(t, work, name)
	killOnCleanup(t, pid)
	time.Sleep(30 * time.Millisecond)
	kill := []int{guardPID(t, stderr)}
	if m := regexp.MustCompile(`shim: PID (\d+)`).FindStringSubmatch(stderr()); m != nil {
		shim, _ := strconv.Atoi(m[1])
		kill = append(kill, shim)
	} else if mode == "shim" {
		t.Fatalf("no shim:\n%s", stderr())
	}
	for _, p := range append(kill, cmd.Process.Pid) {
		syscall.Kill(p, syscall.SIGKILL)
	}
	cmd.Wait()
	time.Sleep(100 * time.Millisecond)
	reap := func(args ...string) (string, string, int) {
		r := exec.Command(as[0], append(append(as[1:], bin, "reap"), args...)...)
		r.Env = env
		var out, errb strings.Builder
		r.Stdout, r.Stderr = &out, &errb
		if err := r.Run(); err != nil && r.ProcessState == nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), r.ProcessState.ExitCode()
	}
	return crashed{pid: pid, contain: cmd.Process.Pid, stderr: stderr, reap: reap}
}
