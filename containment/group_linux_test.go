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

// TestPidAndWait: Pid is the command's own PID, not the copy's, and its
// tag names the copy; cmd.Path, cmd.Args and cmd.String() are the
// command's again after Start; Wait says how the command ended, in
// every way a command ends.
func TestPidAndWait(t *testing.T) {
	dir := t.TempDir()
	g, err := containment.NewGroup(containment.Options{Originator: "PIDTEST", Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	out := filepath.Join(dir, "out")
	cmd := exec.Command("/bin/sh", "-c", `echo "$$ $RUNNING_PROCESS_ORIGINATOR" > "$0"; exit 3`, out)
	before := cmd.String()
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.String() != before || cmd.Path != "/bin/sh" || cmd.Args[0] != "/bin/sh" {
		t.Errorf("after Start cmd shows %q (Path %q), want the command's %q", cmd.String(), cmd.Path, before)
	}
	pid := g.Pid(cmd)
	err = g.Wait(cmd)
	b, _ := os.ReadFile(out)
	want := fmt.Sprintf("%d PIDTEST:%d\n", pid, cmd.Process.Pid)
	if pid <= 0 || pid == cmd.Process.Pid || string(b) != want {
		t.Errorf("Pid %d, copy %d; the command said %q, want %q", pid, cmd.Process.Pid, b, want)
	}
	var ee *containment.ExitError
	if !errors.As(err, &ee) || !ee.Exited || ee.Code != 3 || ee.Status != 3 || ee.Pid != pid || ee.HolderEnded {
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
		{"not found", containment.Options{}, exec.Command("/nonexistent/contain-test"), func(e *containment.ExitError) bool {
			return e.Status == 127 && e.Err != nil && e.Pid == 0 && strings.Contains(e.Err.Error(), "/nonexistent/contain-test")
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
}

// TestWaitHolderKilled: when the copy that holds a command is killed
// (cmd.Process.Kill, as exec.CommandContext's cancel does), Wait says
// so (HolderEnded, not the command's end) and returns only once the
// crash guard has ended every process of the session: the guard ran as
// a guard in this test binary, which has no Main.
func TestWaitHolderKilled(t *testing.T) {
	dir := t.TempDir()
	g, err := containment.NewGroup(containment.Options{Originator: "HOLDERTEST", Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	bg := filepath.Join(dir, "bg")
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $! > "$0"; exec sleep 301`, bg)
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	pid, sleeper := g.Pid(cmd), readInt(t, bg)
	cmd.Process.Kill()
	err = g.Wait(cmd)
	var ee *containment.ExitError
	if !errors.As(err, &ee) || !ee.HolderEnded || ee.Status != -1 || ee.Pid != pid {
		t.Fatalf("Wait after the copy was killed: %#v", err)
	}
	for _, p := range []int{pid, sleeper} {
		if testtool.Alive(p) {
			t.Errorf("Wait returned with PID %d of the session still there", p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// TestCloseReports: the reports come back from the copies themselves, and
// one that Close ended says so: told to stop by its program.
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
	reports, err := g.Close(context.Background())
	if err != nil || len(reports) != 2 {
		t.Fatalf("Close: %d reports, %v", len(reports), err)
	}
	if r := reports[0]; r.Ending.ExitCode == nil || *r.Ending.ExitCode != 0 || r.Ending.ToldToStop != "" || r.Tag != fmt.Sprintf("REPORTTEST:%d", done.Process.Pid) {
		t.Errorf("the first report: %+v", r.Ending)
	}
	if r := reports[1]; r.Ending.Signal != "SIGTERM" || r.Ending.ToldToStop != run.CloseRequest {
		t.Errorf("the report of the command Close ended: signal %q, told to stop %q; want SIGTERM and %q", r.Ending.Signal, r.Ending.ToldToStop, run.CloseRequest)
	}
	running.Wait()
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
