//go:build linux

package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// ptyRun is contain on a pseudo-terminal of its own: contain leads a new
// session whose controlling terminal the pty is, and has its foreground,
// as a command typed at a terminal has. The test keeps the terminal's
// side (pts) open, to read its settings after contain has ended, and
// reads what is written to it from the master's side.
type ptyRun struct {
	t           *testing.T
	master, pts *os.File
	cmd         *exec.Cmd
	out         syncBuffer
	done        chan error
}

// onPty starts contain with args on a new pseudo-terminal, env added to
// its environment.
func onPty(t *testing.T, env []string, args ...string) *ptyRun {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	p := &ptyRun{t: t, master: master, pts: pts, done: make(chan error, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			p.out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	p.cmd = containCmd(runOpts{env: env}, args...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = pts, pts, pts
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, p.cmd.Process.Pid)
	go func() { p.done <- p.cmd.Wait() }()
	return p
}

// settings reads the terminal's settings from its side.
func (p *ptyRun) settings() *unix.Termios {
	p.t.Helper()
	s, err := unix.IoctlGetTermios(int(p.pts.Fd()), unix.TCGETS)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// cooked reports whether the terminal reads lines and echoes them, as
// stty raw -echo undoes.
func (p *ptyRun) cooked() bool {
	return p.settings().Lflag&(unix.ICANON|unix.ECHO) == unix.ICANON|unix.ECHO
}

// waitRaw waits until COMMAND has set the terminal raw, failing should
// contain end first.
func (p *ptyRun) waitRaw() {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.cooked() {
		select {
		case err := <-p.done:
			p.done <- err
			p.t.Fatalf("contain ended (%v) before COMMAND set the terminal raw; the terminal showed:\n%s", err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("COMMAND never set the terminal raw; the terminal showed:\n%s", p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitOutput waits until the terminal has shown want count times.
func (p *ptyRun) waitOutput(want string, count int) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.out.String(), want) < count {
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %q %d times; it showed:\n%s", want, count, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits, a minute at most, for contain to end: its exit status, or
// 128+N when it died of signal N.
func (p *ptyRun) wait() int {
	p.t.Helper()
	var err error
	select {
	case err = <-p.done:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		p.t.Fatalf("contain did not end within a minute; the terminal showed:\n%s", p.out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	p.t.Fatal(err)
	return -1
}

// ended reports, without waiting, whether contain has ended.
func (p *ptyRun) ended() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// TestTerminalSettingsPutBack: a COMMAND that set the terminal raw and
// was ended by a signal (contain's timeout, contain stop, a kill -9 from
// outside), or by contain's timeout signal that it caught and exited of,
// leaves the terminal as contain found it: lines and echo again, where a
// shell without job control (sh, a script) would else read its next lines
// blind. A COMMAND that exits of itself leaves it as it chose, as it would
// without contain. The timeout runs with each way contain starts COMMAND
// (the settings are kept before the shim starts it).
func TestTerminalSettingsPutBack(t *testing.T) {
	testtool.Need(t, "stty", "coreutils")
	check := func(t *testing.T, p *ptyRun, code, wantCode int, wantCooked bool) {
		t.Helper()
		if code != wantCode {
			t.Errorf("contain's status %d, want %d; the terminal showed:\n%s", code, wantCode, p.out.String())
		}
		if got := p.cooked(); got != wantCooked {
			t.Errorf("after contain: ICANON and ECHO on: %v, want %v (lflag %#x); the terminal showed:\n%s",
				got, wantCooked, p.settings().Lflag, p.out.String())
		}
	}
	terminalModes(t, func(t *testing.T, env []string) {
		// contain timeout's own timer; 3 s is for sh and stty to run.
		p := onPty(t, env, "timeout", "3", "sh", "-c", "stty raw -echo; exec sleep 300")
		p.waitRaw()
		check(t, p, p.wait(), 124, true)
	})
	t.Run("timeout signal caught", func(t *testing.T) {
		// The timeout (SIGALRM: time out now, once it is raw) sends
		// SIGTERM, which COMMAND catches and exits 1 of, raw still.
		p := onPty(t, nil, "timeout", "300", "sh", "-c", `trap "exit 1" TERM; stty raw -echo; sleep 300 & wait`)
		p.waitRaw()
		p.cmd.Process.Signal(unix.SIGALRM)
		check(t, p, p.wait(), 124, true)
	})
	t.Run("contain stop", func(t *testing.T) {
		tool := uniqueTool(t)
		p := onPty(t, nil, "run", "-o", tool, "--", "sh", "-c", "stty raw -echo; exec sleep 300")
		p.waitRaw()
		res := run(t, runOpts{}, "stop", "-t", "30", fmt.Sprintf("%s:%d", tool, p.cmd.Process.Pid))
		wantCode(t, res, 0)
		check(t, p, p.wait(), 128+int(unix.SIGTERM), true)
	})
	t.Run("kill -9 from outside", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		p := onPty(t, nil, "run", "--", "sh", "-c", `echo $$ > "$0"; stty raw -echo; exec sleep 300`, pidFile)
		p.waitRaw()
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		unix.Kill(pid, unix.SIGKILL)
		check(t, p, p.wait(), 128+int(unix.SIGKILL), true)
	})
	t.Run("exits of itself", func(t *testing.T) {
		p := onPty(t, nil, "run", "--", "sh", "-c", "stty raw -echo; exit 0")
		check(t, p, p.wait(), 0, false)
	})
}

// TestTerminalCtrlCGoesToCommand: Ctrl-C at the terminal is the
// terminal's, sent by the kernel to its foreground process group,
// COMMAND's, as it would be to the bare command: contain is not in that
// group and receives nothing, so a COMMAND that catches SIGINT (an editor,
// a REPL) goes on after a first Ctrl-C, after a second one too, and after
// the grace period; it ends when it chooses to. A SIGINT sent to contain
// itself is a request to stop, and a second one kills the group at once,
// well within the grace period (60 s here).
func TestTerminalCtrlCGoesToCommand(t *testing.T) {
	script := `trap "echo got-INT" INT; echo ready; while [ ! -e "$0" ]; do sleep 0.1; done; echo clean-exit; exit 3`
	t.Run("Ctrl-C", func(t *testing.T) {
		quit := filepath.Join(t.TempDir(), "quit")
		p := onPty(t, nil, "run", "-v", "-g", "1s", "--", "sh", "-c", script, quit)
		p.waitOutput("ready", 1)
		for i := 1; i <= 2; i++ {
			if _, err := p.master.Write([]byte{3}); err != nil {
				t.Fatal(err)
			}
			p.waitOutput("got-INT", i)
		}
		// Past the grace period: nothing ends the group.
		time.Sleep(2 * time.Second)
		if p.ended() {
			t.Fatalf("contain ended after two Ctrl-C; the terminal showed:\n%s", p.out.String())
		}
		os.WriteFile(quit, nil, 0o644)
		if code := p.wait(); code != 3 {
			t.Errorf("contain's status %d, want COMMAND's 3; the terminal showed:\n%s", code, p.out.String())
		}
		// Read to contain's last line (-v's done:), which the reader may
		// not have read yet when contain has ended.
		p.waitOutput("clean-exit", 1)
		p.waitOutput("contain: done:", 1)
		if s := p.out.String(); strings.Contains(s, "received SIGINT") {
			t.Errorf("contain received SIGINT; the terminal showed:\n%s", s)
		}
	})
	t.Run("SIGINT to contain", func(t *testing.T) {
		quit := filepath.Join(t.TempDir(), "quit")
		p := onPty(t, nil, "run", "-v", "-g", "60s", "--", "sh", "-c", script, quit)
		p.waitOutput("ready", 1)
		p.cmd.Process.Signal(unix.SIGINT)
		p.waitOutput("got-INT", 1)
		began := time.Now()
		p.cmd.Process.Signal(unix.SIGINT)
		code := p.wait()
		if took := time.Since(began); took > 30*time.Second {
			t.Errorf("the second SIGINT to contain ended the group after %v, not at once", took)
		}
		p.waitOutput("contain: done:", 1)
		// COMMAND was killed, and contain dies of its signal.
		if s := p.out.String(); code != 128+int(unix.SIGKILL) || strings.Contains(s, "clean-exit") || !strings.Contains(s, "received SIGINT") {
			t.Errorf("contain's status %d, want %d, COMMAND killed; the terminal showed:\n%s", code, 128+int(unix.SIGKILL), s)
		}
	})
}
