//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// pane is a tmux session on a private server: a real pseudo-terminal with
// a real shell, typed into and read back as a person would.
type pane struct {
	t      *testing.T
	socket string
	env    []string
}

// newPane starts command (a shell, usually) in a new tmux pane, with env
// added to its environment.
func newPane(t *testing.T, env []string, command string) *pane {
	t.Helper()
	testtool.Need(t, "tmux", "tmux")
	p := &pane{t: t, socket: fmt.Sprintf("contain-test-%d-%d", os.Getpid(), time.Now().UnixNano()), env: env}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", command)
	t.Cleanup(func() { exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...)
	cmd.Env = append(append(os.Environ(), "TERM=xterm", "PS1=$ ", "CONTAIN="+bin), p.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// typeLine types text and Enter.
func (p *pane) typeLine(text string) { p.tmux("send-keys", "-l", text); p.tmux("send-keys", "Enter") }

// key sends one key such as C-z.
func (p *pane) key(k string) { p.tmux("send-keys", k) }

// reset clears the screen and the scrollback, so that counts start afresh.
func (p *pane) reset() {
	p.typeLine("clear; echo cleared")
	p.waitFor("cleared", 1)
	p.tmux("clear-history")
	p.typeLine("clear")
	time.Sleep(100 * time.Millisecond)
}

func (p *pane) screen() string { return p.tmux("capture-pane", "-p", "-S", "-200") }

// waitFor waits until the screen shows want (count times at least).
func (p *pane) waitFor(want string, count int) {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(p.screen(), want) < count {
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %q; screen:\n%s", want, p.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminalModes runs a terminal test with each way contain starts
// COMMAND: as root with a cgroup, and under either kind of shim (no
// cgroup), which gives COMMAND the terminal and relays its stops.
func terminalModes(t *testing.T, f func(t *testing.T, env []string)) {
	t.Run("cgroup", func(t *testing.T) { f(t, nil) })
	for _, m := range shimModes() {
		t.Run(m.name, func(t *testing.T) { f(t, m.env) })
	}
}

func interactiveShell(t *testing.T, env []string) *pane {
	testtool.Need(t, "bash", "bash")
	p := newPane(t, env, "bash --norc --noprofile -i")
	p.typeLine("PS1='$ '; echo shell-ready")
	p.waitFor("shell-ready", 2)
	return p
}

func TestTerminalRead(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := interactiveShell(t, env)
		p.typeLine(`$CONTAIN run -- sh -c 'echo ready-1; read x; echo got:$x'; echo rc=$?`)
		p.waitFor("ready-1", 2)
		p.typeLine("hello")
		p.waitFor("got:hello", 1)
		p.waitFor("rc=0", 1)
	})
}

// TestTerminalCtrlC: Ctrl-C ends COMMAND, and contain then dies of SIGINT
// itself, as GNU timeout does, so that the shell sees an interrupted job:
// it drops the rest of the line and stops a loop at once. ($((1+1))
// tells a line that ran from the line as typed.)
func TestTerminalCtrlC(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := interactiveShell(t, env)
		p.typeLine(`$CONTAIN run -- sh -c 'echo ready-2; sleep 300'; echo after-$((1+1))`)
		p.waitFor("ready-2", 2)
		p.key("C-c")
		p.typeLine("echo rc=$?")
		p.waitFor("rc=130", 1)
		if strings.Contains(p.screen(), "after-2") {
			t.Fatalf("the shell went on with the line after Ctrl-C:\n%s", p.screen())
		}

		p.reset()
		p.typeLine(`for i in 1 2 3; do $CONTAIN run -- sh -c 'echo loop-$((10+$0)); sleep 300' $i; done; echo loop-end-$((1+1))`)
		p.waitFor("loop-11", 1)
		p.key("C-c")
		p.typeLine("echo rc=$?")
		p.waitFor("rc=130", 1)
		if s := p.screen(); strings.Contains(s, "loop-12") || strings.Contains(s, "loop-end-2") {
			t.Fatalf("one Ctrl-C did not end the loop:\n%s", s)
		}
	})
}

func TestTerminalStopAndResume(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := interactiveShell(t, env)
		p.typeLine(`$CONTAIN run -- sh -c 'echo ready-3; read x; echo got:$x'`)
		p.waitFor("ready-3", 2)
		p.key("C-z")
		p.waitFor("Stopped", 1)
		// The shell has its terminal back and sees contain stopped.
		p.typeLine("jobs -l; echo after-stop")
		p.waitFor("after-stop", 2)
		if !strings.Contains(p.screen(), "Stopped                 $CONTAIN run") {
			t.Fatalf("the stopped job is not contain:\n%s", p.screen())
		}
		p.typeLine("fg")
		p.typeLine("resumed")
		p.waitFor("got:resumed", 1)
		p.typeLine("echo rc=$?")
		p.waitFor("rc=0", 1)

		// bg: COMMAND goes on in the background, and finishes.
		p.reset()
		p.typeLine(`$CONTAIN run -- sh -c 'echo ready-4; sleep 0.5; echo bg-done'`)
		p.waitFor("ready-4", 2)
		p.key("C-z")
		p.waitFor("Stopped", 1)
		p.typeLine("bg")
		p.waitFor("bg-done", 2)
		p.typeLine("wait; echo waited-rc=$?")
		p.waitFor("waited-rc=0", 1)
	})
}

// TestTerminalStoppedThenBackground: after Ctrl-Z and bg the shell has
// the terminal; when COMMAND then ends (by the timeout), contain leaves it
// there: taken back for contain's group, it would leave the shell unable
// to read its next line, and an interactive bash exits.
func TestTerminalStoppedThenBackground(t *testing.T) {
	p := interactiveShell(t, nil)
	p.typeLine(`$CONTAIN timeout 4 sh -c 'echo ready-6; exec sleep 300'`)
	p.waitFor("ready-6", 2)
	p.key("C-z")
	p.waitFor("Stopped", 1)
	// At its prompt, reading, when contain ends (set -b: bash says so
	// then).
	p.typeLine("set -b; bg")
	p.waitFor("Exit 124", 1)
	p.typeLine("echo alive-$((1+1))")
	p.waitFor("alive-2", 1)
}

// TestTerminalGivenBack: a shell without job control does not take the
// terminal back itself; contain must, or the shell's next read fails.
func TestTerminalGivenBack(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := newPane(t, env, `sh -c '$CONTAIN run -- sh -c "echo inner-ran"; echo type-now; read x; echo after:$x; sleep 300'`)
		p.waitFor("type-now", 1)
		p.typeLine("back")
		p.waitFor("after:back", 1)
	})
}

// TestTerminalGivenBackAfterFailedStart: a COMMAND that takes the
// terminal and then cannot be executed (not found, not executable) leaves
// it to contain's group again, for a shell without job control to read.
func TestTerminalGivenBackAfterFailedStart(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := newPane(t, env, `sh -c '$CONTAIN run -- /nonexistent/command; echo rc=$? type-now; read x; echo after:$x; sleep 300'`)
		p.waitFor("rc=127 type-now", 1)
		p.typeLine("back")
		p.waitFor("after:back", 1)
	})
}

// TestTerminalStopWithoutJobControl: Ctrl-Z under a shell without job
// control must not leave COMMAND stopped forever: as the kernel does for an
// orphaned process group, the stop is ignored.
func TestTerminalStopWithoutJobControl(t *testing.T) {
	terminalModes(t, func(t *testing.T, env []string) {
		p := newPane(t, env, `sh -c '$CONTAIN run -- sh -c "echo ready-5; read x; echo got:\$x"; echo rc=$?; sleep 300'`)
		p.waitFor("ready-5", 1)
		p.key("C-z")
		time.Sleep(200 * time.Millisecond)
		p.typeLine("still-here")
		p.waitFor("got:still-here", 1)
		p.waitFor("rc=0", 1)
	})
}
