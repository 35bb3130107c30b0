//go:build linux || darwin

package run

import (
	"fmt"
	"os"
	"os/exec"
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

// TestRunHold runs a held session (Options.Hold) in this process, on the
// tracking alone: what this test starts with the session's tag, and what
// it starts without it but names on Members, are the session's, and the
// request to close ends them all, one that ignores SIGTERM by SIGKILL
// after the grace period; what carries no tag and is not named is left.
func TestRunHold(t *testing.T) {
	t.Setenv("CONTAIN_DISABLE", "cgroup,subreaper")
	value := "HOLDTEST:" + strconv.Itoa(os.Getpid())
	env := append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+value)
	start := func(env []string, argv ...string) *exec.Cmd {
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = env
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	closeIt, members := make(chan struct{}, 1), make(chan proc.ID, 1)
	held := make(chan string, 1)
	var log strings.Builder
	done := make(chan Result, 1)
	go func() {
		res, err := Run(Options{Hold: true, Tag: value, Signal: syscall.SIGTERM, Grace: 300 * time.Millisecond,
			Close: closeIt, Members: members, Held: func(cg string) { held <- cg },
			Log: func(format string, a ...any) { fmt.Fprintf(&log, format+"\n", a...) }})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if cg := <-held; cg != "" {
		t.Errorf("Held told of cgroup %q with the cgroup turned off", cg)
	}
	tagged := start(env, "/bin/sh", "-c", "trap '' TERM; sleep 300 & exec sleep 301")
	named := start(os.Environ(), "/bin/sleep", "302")
	stranger := start(os.Environ(), "/bin/sleep", "303")
	members <- proc.ID{PID: named.Process.Pid, Start: proc.StartOf(named.Process.Pid)}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := proc.StartOf(tagged.Process.Pid); s != 0 && strings.Contains(log.String(), "started in the session") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session never took the named process")
		}
	}
	time.Sleep(300 * time.Millisecond) // the tracking's scans see the tagged tree
	closeIt <- struct{}{}
	res := <-done
	t.Logf("the run's log:\n%s", log.String())
	if !res.Exited || res.Code != 0 || res.Pid != 0 {
		t.Errorf("a held session's result %+v, want exit 0 and no PID", res)
	}
	for name, c := range map[string]*exec.Cmd{"tagged": tagged, "named": named} {
		if err := c.Wait(); err == nil {
			t.Errorf("the %s process exited 0: it was not ended", name)
		}
	}
	if ws, ok := tagged.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the tagged process that ignores SIGTERM: %v, want killed by SIGKILL after the grace period", tagged.ProcessState)
	}
	if !testtool.Alive(stranger.Process.Pid) {
		t.Errorf("a process neither tagged nor named was ended")
	}
}

// TestSpecHold: a held session runs no COMMAND and is timed out by no
// one but its starter.
func TestSpecHold(t *testing.T) {
	for _, s := range []Spec{{Hold: true, Args: []string{"x"}}, {Hold: true, Timeout: time.Second}, {Hold: true, Detach: true},
		{Hold: true, OnTimeout: "echo"}, {Hold: true, PreserveStatus: true}} {
		if err := s.Check(); err == nil {
			t.Errorf("Check accepted %+v", s)
		}
	}
	if s := (Spec{Hold: true, Args: []string{}}); s.Check() != nil {
		t.Errorf("Check refused a held session: %v", s.Check())
	}
}

// TestRunHoldMembersBeforeClose: a member told just before the request
// to close is ended with the session, over many rounds: the main loop may
// pick the request first when both are there (as under load, when a
// program starts a command and closes its Group at once), and the held
// session takes what it was told before it closes.
func TestRunHoldMembersBeforeClose(t *testing.T) {
	t.Setenv("CONTAIN_DISABLE", "cgroup,subreaper")
	value := "HOLDRACE:" + strconv.Itoa(os.Getpid())
	for round := range 20 {
		c := exec.Command("/bin/sleep", "300") // no tag: only the word to the holder makes it a member
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		closeIt, members := make(chan struct{}, 1), make(chan proc.ID, 1)
		members <- proc.ID{PID: c.Process.Pid, Start: proc.StartOf(c.Process.Pid)}
		closeIt <- struct{}{}
		if _, err := Run(Options{Hold: true, Tag: value, Signal: syscall.SIGTERM, Grace: 200 * time.Millisecond,
			Close: closeIt, Members: members}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("round %d: the member exited 0", round)
			}
		case <-time.After(5 * time.Second):
			c.Process.Kill()
			<-done
			t.Fatalf("round %d: the member told before the close outlived the session", round)
		}
	}
}
