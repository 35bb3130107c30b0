//go:build linux

package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// The claim socket of contain run --allow-daemons (@contain-daemons-PID)
// against another user, and against a member that forges a claim. The
// other side is testdata/claimer, built beside contain.

var claimerFix builtOnce

// needClaimer builds testdata/claimer once, where every user may run it.
func needClaimer(t *testing.T) string {
	t.Helper()
	return claimerFix.path(t, "claimer", ".", "./testdata/claimer")
}

// claimAttack is a run and the user who attacks it: root's run and
// nobody, nobody's run and daemon.
type claimAttack struct {
	name     string
	victim   runOpts
	attacker []string // the setpriv prefix
}

func claimAttacks(t *testing.T) []claimAttack {
	t.Helper()
	requireRoot(t, "the attacker is another user")
	testtool.Need(t, "setpriv", "util-linux")
	needClaimer(t)
	return []claimAttack{
		{"root-by-nobody", runOpts{}, []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}},
		{"nobody-by-daemon", runOpts{asNobody: true}, []string{"setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups", "--"}},
	}
}

// attacker starts claimer as the attacking user; it is killed when the
// test ends.
func (a claimAttack) start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	argv := append(append(append([]string{}, a.attacker...), needClaimer(t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestClaimHangUpNoSIGPIPE (item 1): another user connects to the run's
// socket and hangs up. The answer to a closed peer must not raise a
// SIGPIPE in contain, which would take it for one from outside and
// forward it to COMMAND's group (exit 141, COMMAND killed).
func TestClaimHangUpNoSIGPIPE(t *testing.T) {
	t.Parallel()
	for _, a := range claimAttacks(t) {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			cmd, wait := startContain(t, a.victim, "run", "--allow-daemons", "-v", "--", "sh", "-c", "sleep 1.5; echo finished")
			att := a.start(t, "close", strconv.Itoa(cmd.Process.Pid))
			err := att.Wait()
			res := wait()
			if err != nil {
				t.Logf("the attacker: %v", err)
			}
			if strings.Contains(res.stderr, "SIGPIPE") || res.code != 0 || !strings.Contains(res.stdout, "finished") {
				t.Fatalf("a hang-up on the claim socket reached COMMAND: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
		})
	}
}

// TestClaimSlowClientNotHeld (item 2): another user holds many
// connections, sending a byte every 1.5 s. A real claim made meanwhile is
// answered, and the run ends when COMMAND does, not when the attacker
// lets go.
func TestClaimSlowClientNotHeld(t *testing.T) {
	t.Parallel()
	for _, a := range claimAttacks(t) {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			script := fmt.Sprintf("sleep 1; %s run -d -v -- sleep 300 > %s/daemon 2> %s/claim; sleep 0.3", bin, dir, dir)
			began := time.Now()
			cmd, wait := startContain(t, a.victim, "run", "--allow-daemons", "--", "sh", "-c", script)
			a.start(t, "trickle", strconv.Itoa(cmd.Process.Pid), "12", "15")
			res := wait()
			took := time.Since(began)
			wantCode(t, res, 0)
			daemon := readPID(t, dir, "daemon")
			killOnCleanup(t, daemon)
			claim, _ := os.ReadFile(filepath.Join(dir, "claim"))
			if !strings.Contains(string(claim), fmt.Sprintf("lets %d (sleep) outlive it", daemon)) {
				t.Errorf("the real claim was not answered while another user held the socket:\n%s", claim)
			}
			if took > 5*time.Second {
				t.Errorf("the run took %v: held by another user's connections", took)
			}
		})
	}
}

// TestClaimSocketSquatted (item 3): another user binds the socket names of
// the next PIDs first. The run says, without -v, that it cannot listen;
// contain run -d inside sees who listens (not its session's contain) and
// sends it nothing. One case after the other: both squat the same PIDs.
// Sequential: the names it squats are those of whatever contain starts
// next, and another test's run with --allow-daemons given one of those
// PIDs found its socket taken (TestReapSpared, once in CI).
func TestClaimSocketSquatted(t *testing.T) {
	for _, a := range claimAttacks(t) {
		t.Run(a.name, func(t *testing.T) {
			dir := sharedDir(t)
			got := filepath.Join(dir, "squatted")
			if err := os.WriteFile(got, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chmod(got, 0o666)
			argv := append(append(append([]string{}, a.attacker...), needClaimer(t)), "squat", "300", got)
			sq := exec.Command(argv[0], argv[1:]...)
			in, _ := sq.StdinPipe()
			out, _ := sq.StdoutPipe()
			sq.Stderr = os.Stderr
			if err := sq.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				in.Close()
				sq.Process.Kill()
				sq.Wait()
			})
			var first, last, bound int
			line, _ := bufio.NewReader(out).ReadString('\n')
			if _, err := fmt.Sscanf(line, "ready %d %d %d", &first, &last, &bound); err != nil || bound < 250 {
				t.Fatalf("the squatter: %q (%v)", line, err)
			}
			script := fmt.Sprintf("%s run -d -v -- sleep 300 > %s/daemon 2> %s/claim", bin, dir, dir)
			cmd, wait := startContain(t, a.victim, "run", "--allow-daemons", "--", "sh", "-c", script)
			res := wait()
			if pid := cmd.Process.Pid; pid < first || pid > last {
				t.Skipf("contain ran as PID %d, past the squatted %d-%d", pid, first, last)
			}
			wantCode(t, res, 0)
			daemon := readPID(t, dir, "daemon")
			killOnCleanup(t, daemon)
			if !strings.Contains(res.stderr, "contain: cannot listen for contain run -d's daemons") {
				t.Errorf("the run does not say it cannot listen:\n%s", res.stderr)
			}
			claim, _ := os.ReadFile(filepath.Join(dir, "claim"))
			if strings.Contains(string(claim), "outlive it") || !strings.Contains(string(claim), "not session") {
				t.Errorf("contain run -d did not refuse the squatter:\n%s", claim)
			}
			if b, _ := os.ReadFile(got); len(b) > 0 {
				t.Errorf("the squatter was sent a claim: %s", b)
			}
		})
	}
}

// TestClaimForgedByMember (item 9): a member connects, starts a child
// without the mark that holds the connection, and becomes contain (run,
// not run -d); the child then claims itself. It must be refused (the
// answer "no ...", and -v says so) and not outlive the run, its
// environment readable and unmarked or showing nothing (empty). A refused
// child exits at once: its parent, a contain run, would wait for it.
func TestClaimForgedByMember(t *testing.T) {
	t.Parallel()
	needClaimer(t)
	modes := []struct {
		name  string
		o     runOpts
		empty string
	}{{"self-unmarked", runOpts{}, "0"}, {"self-empty-env", runOpts{}, "1"}}
	if os.Geteuid() == 0 {
		modes = append(modes, struct {
			name  string
			o     runOpts
			empty string
		}{"nobody-unmarked", runOpts{asNobody: true}, "0"}, struct {
			name  string
			o     runOpts
			empty string
		}{"nobody-empty-env", runOpts{asNobody: true}, "1"})
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			res := run(t, m.o, "run", "--allow-daemons", "-v", "--", needClaimer(t), "forge", dir, m.empty, bin)
			forged := readPID(t, dir, "forged")
			killOnCleanup(t, forged)
			wantCode(t, res, 0)
			answer, _ := os.ReadFile(filepath.Join(dir, "answer"))
			if alive(forged) || !strings.HasPrefix(string(answer), "no ") {
				t.Fatalf("the forged claim of %d was believed (answer %q):\n%s", forged, answer, res.stderr)
			}
			if !strings.Contains(res.stderr, "refused a daemon's claim") {
				t.Errorf("-v does not say the claim was refused (answer %q):\n%s", answer, res.stderr)
			}
		})
	}
}
