package containment_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/testtool"
)

// readInt waits up to 10 s for path to hold a number, and returns it.
func readInt(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && strings.HasSuffix(string(b), "\n") {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held a number: %q", path, b)
		}
	}
}

// TestPidAndWait: every command of a Group is the program's own child
// (cmd.Process, Pid), tagged with the session's tag, which names the
// Group's holder (Tag); cmd.Path, cmd.Args and cmd.String() are untouched;
// Wait says how the command ended, in every way a command ends, and a
// command that cannot be started is Start's error, as with os/exec.
func TestPidAndWait(t *testing.T) {
	dir := t.TempDir()
	g, err := containment.NewGroup(containment.Options{Originator: "PIDTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	if g.Tag() != "" {
		t.Errorf("Tag before the first command: %q, want \"\"", g.Tag())
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command("/bin/sh", "-c", `echo "$$ $RUNNING_PROCESS_ORIGINATOR" > "$0"; exit 3`, out)
	before := cmd.String()
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.String() != before || cmd.Path != "/bin/sh" || cmd.Args[0] != "/bin/sh" || cmd.Env != nil || cmd.SysProcAttr != nil {
		t.Errorf("after Start cmd shows %q (Path %q, Env %v, SysProcAttr %v), want the command's %q as it was", cmd.String(), cmd.Path, cmd.Env, cmd.SysProcAttr, before)
	}
	pid := g.Pid(cmd)
	err = g.Wait(cmd)
	b, _ := os.ReadFile(out)
	holder := 0
	if tool, p, ok := strings.Cut(g.Tag(), ":"); ok && tool == "PIDTEST" {
		holder, _ = strconv.Atoi(p)
	}
	want := fmt.Sprintf("%d %s\n", pid, g.Tag())
	if pid <= 0 || pid != cmd.Process.Pid || holder <= 1 || holder == pid || holder == os.Getpid() || string(b) != want {
		t.Errorf("Pid %d, cmd.Process %d, Tag %q; the command said %q, want %q", pid, cmd.Process.Pid, g.Tag(), b, want)
	}
	var ee *containment.ExitError
	if !errors.As(err, &ee) || !ee.Exited || ee.Code != 3 || ee.Status != 3 || ee.Pid != pid || ee.HolderEnded || ee.Err != nil ||
		ee.ProcessState != cmd.ProcessState || ee.Error() != "containment: the command exited with 3" {
		t.Errorf("Wait of exit 3: %#v", err)
	}
	if err := g.Wait(cmd); !errors.Is(err, containment.ErrUnknownCommand) {
		t.Errorf("a second Wait: %v, want ErrUnknownCommand", err)
	}

	for _, c := range []struct {
		name string
		o    containment.Options
		cmd  *exec.Cmd
		want func(*containment.ExitError) bool
	}{
		{"exit 0", containment.Options{}, exec.Command("/bin/true"), nil},
		{"killed", containment.Options{}, exec.Command("/bin/sh", "-c", "kill -9 $$"), func(e *containment.ExitError) bool {
			return e.Signal == syscall.SIGKILL && e.Status == 137 && !e.Exited && !e.TimedOut
		}},
		{"timeout", containment.Options{Timeout: 100 * time.Millisecond}, exec.Command("/bin/sleep", "10"), func(e *containment.ExitError) bool {
			return e.TimedOut && e.Status == 124 && e.Signal == syscall.SIGTERM
		}},
		{"timeout, killed after", containment.Options{Timeout: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond},
			exec.Command("/bin/sh", "-c", "trap '' TERM; sleep 10"), func(e *containment.ExitError) bool {
				return e.TimedOut && e.Status == 137 && e.Signal == syscall.SIGKILL
			}},
	} {
		g, err := containment.NewGroup(c.o)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(c.cmd); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = g.Wait(c.cmd)
		var ee *containment.ExitError
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: Wait = %v, want nil", c.name, err)
		case c.want != nil && (!errors.As(err, &ee) || !c.want(ee)):
			t.Errorf("%s: Wait = %#v", c.name, err)
		}
		g.Close(context.Background())
	}

	nf := exec.Command("/nonexistent/contain-test")
	if err := g.Start(nf); !errors.Is(err, os.ErrNotExist) || g.Pid(nf) != 0 {
		t.Errorf("Start of a command that is not there: %v (Pid %d), want os/exec's error", err, g.Pid(nf))
	}
}

// TestWaitLeftInGroup: Wait ends what the command left in its process
// group (SIGTERM, SIGKILL after the grace period for one that ignores
// it) before it returns, so that a background job holding the command's
// output does not hold cmd.Wait; what left the process group (setsid) is
// the session's, ended by Close.
func TestWaitLeftInGroup(t *testing.T) {
	dir := t.TempDir()
	g, err := containment.NewGroup(containment.Options{Originator: "LEFTTEST", Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	bg, deaf, away := filepath.Join(dir, "bg"), filepath.Join(dir, "deaf"), filepath.Join(dir, "away")
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $! > "$0"
sh -c 'trap "" TERM; echo $$ > "$0"; while :; do sleep 1; done' "$1" &
setsid sh -c 'echo $$ > "$0"; exec sleep 300' "$2" &
while [ ! -s "$1" ] || [ ! -s "$2" ]; do sleep 0.01; done`, bg, deaf, away)
	var stdout strings.Builder
	cmd.Stdout = &stdout // a pipe, which the jobs hold
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	err = g.Wait(cmd)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	pb, pd, pa := readInt(t, bg), readInt(t, deaf), readInt(t, away)
	for _, p := range []int{pb, pd} {
		if testtool.Alive(p) {
			t.Errorf("Wait returned with %d of the command's process group still running", p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if !testtool.Alive(pa) {
		t.Fatalf("the setsid one (%d) ended with the command: it is the session's, ended by Close", pa)
	}
	g.Close(context.Background())
	if testtool.Alive(pa) {
		t.Errorf("Close returned with the setsid one (%d) running", pa)
		syscall.Kill(pa, syscall.SIGKILL)
	}
}

// TestWaitHolderKilled: when the copy that holds the Group's session is
// killed, its crash guard ends the session (the guard ran as a guard in
// this test binary, which has no Main); Wait says so (HolderEnded, with
// how the command ended), and the Group starts nothing more.
func TestWaitHolderKilled(t *testing.T) {
	dir := t.TempDir()
	g, err := containment.NewGroup(containment.Options{Originator: "HOLDERTEST", Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	bg := filepath.Join(dir, "bg")
	cmd := exec.Command("/bin/sh", "-c", `setsid sleep 300 & echo $! > "$0"; exec sleep 301`, bg)
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	pid, sleeper := g.Pid(cmd), readInt(t, bg)
	_, p, _ := strings.Cut(g.Tag(), ":")
	holder, _ := strconv.Atoi(p)
	if holder <= 1 {
		t.Fatalf("Tag %q names no holder", g.Tag())
	}
	syscall.Kill(holder, syscall.SIGKILL)
	err = g.Wait(cmd)
	var ee *containment.ExitError
	if !errors.As(err, &ee) || !ee.HolderEnded || ee.Pid != pid || ee.Signal == 0 {
		t.Fatalf("Wait after the holder was killed: %#v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); testtool.Alive(sleeper) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if testtool.Alive(sleeper) {
		t.Errorf("the session's %d outlived its holder's crash guard", sleeper)
		syscall.Kill(sleeper, syscall.SIGKILL)
	}
	if err := g.Start(exec.Command("/bin/true")); !errors.Is(err, containment.ErrClosed) {
		t.Errorf("Start after the holder was killed: %v, want ErrClosed", err)
	}
}

// TestCloseReports: the session's report comes back from the holder, and
// says what Close ended and that the program closed it.
func TestCloseReports(t *testing.T) {
	g, err := containment.NewGroup(containment.Options{Originator: "REPORTTEST", Grace: 200 * time.Millisecond, Reports: true})
	if err != nil {
		t.Fatal(err)
	}
	done, running := exec.Command("/bin/true"), exec.Command("/bin/sleep", "300")
	for _, c := range []*exec.Cmd{done, running} {
		if err := g.Start(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Wait(done); err != nil {
		t.Fatal(err)
	}
	tag := g.Tag()
	reports, err := g.Close(context.Background())
	if err != nil || len(reports) != 1 {
		t.Fatalf("Close: %d reports, %v", len(reports), err)
	}
	r := reports[0]
	ended := false
	for _, e := range r.EndedByContain {
		ended = ended || e.PID == running.Process.Pid && e.Signal == "SIGTERM"
	}
	if r.Ending.ExitCode != nil || r.Ending.TimedOut != nil || r.Ending.Absent["exit_code"] == "" {
		t.Errorf("the session's report says a COMMAND's end: exit code %v, timed out %v, absent %q", r.Ending.ExitCode, r.Ending.TimedOut, r.Ending.Absent)
	}
	for _, l := range r.Leftovers {
		if l.LeftProcessGroup != nil || l.HeldStdout != nil {
			t.Errorf("leftover %d: left the process group %v, held stdout %v: a held session has no COMMAND to have left", l.PID, l.LeftProcessGroup, l.HeldStdout)
		}
	}
	if r.Tag != tag || r.Ending.ToldToStop != run.CloseRequest || !ended {
		t.Errorf("the report: tag %q (want %q), told to stop %q (want %q), ended by contain %+v (want %d by SIGTERM)",
			r.Tag, tag, r.Ending.ToldToStop, run.CloseRequest, r.EndedByContain, running.Process.Pid)
	}
	if err := running.Wait(); err == nil || err.Error() != "signal: terminated" {
		t.Errorf("the running command's Wait: %v, want signal: terminated", err)
	}
}

func init() { helpers["terminal"] = terminalHost }

// terminalHost, run on a terminal of its own, starts one command that
// says whether it is in the terminal's foreground (fg or bg), with
// Options.Terminal as $CONTAINMENT_TEST_TERMINAL says, then whether the
// host has the terminal back.
func terminalHost() {
	g, err := containment.NewGroup(containment.Options{Originator: "TTYTEST", Terminal: os.Getenv("CONTAINMENT_TEST_TERMINAL") == "1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out := os.Getenv("CONTAINMENT_TEST_OUT")
	cmd := exec.Command("/bin/sh", "-c", `fg=$(ps -o tpgid= -p $$); pg=$(ps -o pgid= -p $$); if [ $fg -eq $pg ]; then echo fg; else echo bg; fi > "$0"`, out)
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	g.Wait(cmd)
	g.Close(context.Background())
	fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	f, _ := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "host foreground %v\n", fg == unix.Getpgrp())
	f.Close()
}

// TestTerminal: a command does not take the program's terminal unless
// Options.Terminal asks, as contain run hands its own to COMMAND; either
// way the program has it back after. The host runs on a pseudo-terminal
// of its own, as its session leader, in the foreground.
func TestTerminal(t *testing.T) {
	testtool.Need(t, "ps", "procps")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ terminal, want string }{{"0", "bg"}, {"1", "fg"}} {
		ptmx, pts := openPty(t)
		out := filepath.Join(t.TempDir(), "out")
		os.WriteFile(out, nil, 0o644)
		host := exec.Command(self)
		host.Env = append(os.Environ(), "CONTAINMENT_TEST_HELPER=terminal", "CONTAINMENT_TEST_TERMINAL="+c.terminal, "CONTAINMENT_TEST_OUT="+out)
		host.Stdin, host.Stdout, host.Stderr = pts, pts, pts
		host.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		go func() {
			b := make([]byte, 4096)
			for {
				if _, err := ptmx.Read(b); err != nil {
					return
				}
			}
		}()
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		pts.Close()
		done := make(chan error, 1)
		go func() { done <- host.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Terminal %s: the host: %v", c.terminal, err)
			}
		case <-time.After(30 * time.Second):
			host.Process.Kill()
			t.Fatalf("Terminal %s: the host never ended", c.terminal)
		}
		ptmx.Close()
		b, _ := os.ReadFile(out)
		if want := c.want + "\nhost foreground true\n"; string(b) != want {
			t.Errorf("Terminal %s: %q, want %q", c.terminal, b, want)
		}
	}
}

func init() { helpers["terminalSettings"] = terminalSettingsHost }

// terminalSettingsHost, run on a terminal of its own, starts one command
// with Options.Terminal, the shell script $CONTAINMENT_TEST_SCRIPT (and
// Options.Timeout $CONTAINMENT_TEST_TIMEOUT), waits for it, and writes
// whether the terminal reads lines and echoes them then: cooked or raw.
func terminalSettingsHost() {
	timeout, _ := time.ParseDuration(os.Getenv("CONTAINMENT_TEST_TIMEOUT"))
	g, err := containment.NewGroup(containment.Options{Originator: "TTYSETTEST", Terminal: true, Timeout: timeout})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("/bin/sh", "-c", os.Getenv("CONTAINMENT_TEST_SCRIPT"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := g.Start(cmd); err != nil {
		fmt.Println(err)
		return
	}
	g.Wait(cmd)
	g.Close(context.Background())
	state := "raw"
	if s, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil && s.Lflag&(unix.ICANON|unix.ECHO) == unix.ICANON|unix.ECHO {
		state = "cooked"
	}
	os.WriteFile(os.Getenv("CONTAINMENT_TEST_OUT"), []byte(state), 0o644)
}

// TestTerminalSettings: as contain run does, a command given the terminal
// (Options.Terminal) that set it raw and was ended by a signal or by its
// timeout (whose SIGTERM it caught, exiting 1) leaves it as it was given;
// one that exits of itself leaves it as it chose.
func TestTerminalSettings(t *testing.T) {
	testtool.Need(t, "stty", "coreutils")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, script, timeout, want string }{
		{"killed", `stty raw -echo; kill -9 $$`, "", "cooked"},
		{"timed out", `trap "exit 1" TERM; stty raw -echo; sleep 300 & wait`, "3s", "cooked"},
		{"exited", `stty raw -echo; exit 0`, "", "raw"},
	} {
		ptmx, pts := openPty(t)
		out := filepath.Join(t.TempDir(), "out")
		host := exec.Command(self)
		host.Env = append(os.Environ(), "CONTAINMENT_TEST_HELPER=terminalSettings", "CONTAINMENT_TEST_SCRIPT="+c.script,
			"CONTAINMENT_TEST_TIMEOUT="+c.timeout, "CONTAINMENT_TEST_OUT="+out)
		host.Stdin, host.Stdout, host.Stderr = pts, pts, pts
		host.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		var shown strings.Builder
		read := make(chan struct{})
		go func() {
			defer close(read)
			b := make([]byte, 4096)
			for {
				n, err := ptmx.Read(b)
				shown.Write(b[:n])
				if err != nil {
					return
				}
			}
		}()
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		pts.Close()
		done := make(chan error, 1)
		go func() { done <- host.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: the host: %v", c.name, err)
			}
		case <-time.After(30 * time.Second):
			host.Process.Kill()
			t.Fatalf("%s: the host never ended", c.name)
		}
		ptmx.Close()
		<-read
		if b, _ := os.ReadFile(out); string(b) != c.want {
			t.Errorf("%s: the terminal was left %q, want %q; it showed:\n%s", c.name, b, c.want, shown.String())
		}
	}
}

// openPty opens a pseudo-terminal pair.
func openPty(t *testing.T) (ptmx, pts *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ptmx = os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ptmx, pts
}

// TestExtraFiles: cmd.ExtraFiles reach the command at their numbers, and
// nothing else holds them: once the command has closed them, while it
// still runs, the pipes it wrote to read to their end (neither the copy
// nor its crash guard nor the shim kept them).
func TestExtraFiles(t *testing.T) {
	g, err := containment.NewGroup(containment.Options{Originator: "FILESTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	cmd := exec.Command("/bin/sh", "-c", `echo one >&3; echo two >&4; exec 3>&- 4>&-; exec sleep 300`)
	cmd.ExtraFiles = []*os.File{w1, w2}
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	w1.Close()
	w2.Close()
	for _, c := range []struct {
		r    *os.File
		want string
	}{{r1, "one\n"}, {r2, "two\n"}} {
		b, _ := io.ReadAll(c.r)
		if string(b) != c.want {
			t.Errorf("the command wrote %q, want %q", b, c.want)
		}
	}
	if pid := g.Pid(cmd); !testtool.Alive(pid) {
		t.Errorf("the pipes ended only with the command (PID %d): something else held them", pid)
	}
	g.Close(context.Background())
	g.Wait(cmd)
}

// TestOwnCgroup: a command that cmd.SysProcAttr starts in a cgroup of its
// own is outside the session's cgroup: the program tells the holder of
// it, and Close ends it all the same. The test's cgroup is its own, made
// and removed here.
func TestOwnCgroup(t *testing.T) {
	mount, _, err := cgroup.Mount()
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and cgroup v2 (%v)", err)
	}
	dir := filepath.Join(mount, fmt.Sprintf("contain-test-own-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	g, err := containment.NewGroup(containment.Options{Originator: "OWNCGTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := g.Start(cmd); err != nil {
		g.Close(context.Background())
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("the command is not in its own cgroup: %q", b)
	}
	if _, err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the command exited 0: Close did not end it")
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("Close returned with the command in a cgroup of its own still running")
	}
}

// longCommand is a command that runs until it is ended.
func longCommand(*testing.T) *exec.Cmd { return exec.Command("/bin/sleep", "300") }

// closeRaceRounds and closeRaceStep: TestCloseWhileStarting's rounds and
// the step of the wait before Close.
const (
	closeRaceRounds = 20
	closeRaceStep   = 2 * time.Millisecond
)

func init() {
	// mayStartIn OWN IN: prints whether this process may start a process
	// in cgroup IN from OWN.
	helpers["mayStartIn"] = func() {
		fmt.Println(containment.MayStartIn(os.Getenv("CONTAINMENT_TEST_OWN"), os.Getenv("CONTAINMENT_TEST_IN")))
	}
}

// TestMayStartIn: a Group holds a session only where the program may
// start processes in the holder's cgroup: as nobody in a cgroup delegated
// to it, in a cgroup below it (the holder's own), but not in a cgroup
// beside it that is root's (where systemd would have moved a holder that
// asked for a scope), whose common ancestor with the program's is not
// nobody's.
func TestMayStartIn(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"/sys/fs/cgroup/u", "/sys/fs/cgroup/u/contain-1", "/sys/fs/cgroup/u"},
		{"/sys/fs/cgroup/u", "/sys/fs/cgroup/u", "/sys/fs/cgroup/u"},
		{"/sys/fs/cgroup/u/app.slice/a.scope", "/sys/fs/cgroup/u/contain-1.scope/contain-1", "/sys/fs/cgroup/u"},
		{"/sys/fs/cgroup/user", "/sys/fs/cgroup/u/x", "/sys/fs/cgroup"},
		{"/", "/a", "/"},
	} {
		if got := containment.CommonAncestor(tc.a, tc.b); got != tc.want {
			t.Errorf("commonAncestor(%s, %s) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("makes cgroups and runs a helper as nobody: needs root")
	}
	deleg, err := testtool.DelegatedCgroup(t, "contain-test-maystart", 65534)
	if err != nil {
		t.Fatalf("no cgroup to delegate: %v", err)
	}
	below := filepath.Join(deleg, "contain-1")
	beside, err := os.MkdirTemp(filepath.Dir(deleg), "contain-test-beside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(beside) })
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"", "cgroup.procs"} {
		// The holder's, as nobody makes it; and the one beside, whose
		// cgroup.procs is nobody's too: the common ancestor refuses.
		for _, d := range []string{below, beside} {
			if err := os.Chown(filepath.Join(d, f), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The test binary, where nobody may run it (go test builds it in a
	// directory of its user's alone).
	self := filepath.Join(t.TempDir(), "containment.test")
	os.Chmod(filepath.Dir(self), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(self)), 0o755)
	exe, _ := os.Executable()
	if b, err := os.ReadFile(exe); err != nil || os.WriteFile(self, b, 0o755) != nil {
		t.Fatalf("cannot copy the test binary: %v", err)
	}
	for in, want := range map[string]string{below: "true", beside: "false", deleg: "true"} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "CONTAINMENT_TEST_HELPER=mayStartIn", "CONTAINMENT_TEST_OWN="+deleg, "CONTAINMENT_TEST_IN="+in)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("as nobody in %s, may start in %s: %q (%v), want %s", deleg, in, got, err, want)
		}
	}
}
