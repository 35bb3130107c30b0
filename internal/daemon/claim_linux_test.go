package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/tag"
)

// The claim's checks that the end-to-end tests cannot reach: there the
// forger is refused as soon as it connects, not running contain yet. Here
// the peer is this test binary (the same executable as the "run"),
// started with contain run -d's command line, forging in each way.

const claimHelperVar = "CONTAIN_CLAIM_TEST_HELPER"

func init() {
	mode := os.Getenv(claimHelperVar)
	if mode == "" {
		return
	}
	os.Exit(claimHelper(mode))
}

// claimHelper is the forging peer (or its child).
func claimHelper(mode string) int {
	if mode == "sleep" {
		time.Sleep(10 * time.Second)
		return 0
	}
	if mode == "writer" { // the peer's child: answers the question itself
		c, _ := newConn(3)
		c.f.SetDeadline(time.Now().Add(2 * time.Second))
		c.readLine(0)
		c.send([]byte(FormatClaim(proc.ID{PID: os.Getpid(), Start: proc.StartOf(os.Getpid())})))
		c.readLine(0)
		return 0
	}
	fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: os.Getenv("CONTAIN_CLAIM_TEST_ADDR")}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	child := func(mode string, env []string, files ...*os.File) *exec.Cmd {
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = append(env, claimHelperVar+"="+mode)
		cmd.ExtraFiles = files
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		return cmd
	}
	var claimed int
	switch mode {
	case "early": // the line before the question
		unix.SendmsgN(fd, []byte(FormatClaim(proc.ID{PID: 2, Start: 1})), nil, nil, unix.MSG_NOSIGNAL)
	case "child": // it alone reads and writes
		child("writer", nil, os.NewFile(uintptr(fd), "claim")).Wait()
		return 0
	case "unmarked", "argv":
		claimed = child("sleep", []string{tag.Var + "=CONTAIN:1", tag.DaemonVar + "="}).Process.Pid
	}
	c, _ := newConn(fd)
	c.f.SetDeadline(time.Now().Add(3 * time.Second))
	if claimed != 0 {
		for proc.StartOf(claimed) == 0 || claimedExeced(claimed) {
			time.Sleep(time.Millisecond)
		}
		c.readLine(0)
		c.send([]byte(FormatClaim(proc.ID{PID: claimed, Start: proc.StartOf(claimed)})))
	}
	c.readLine(0)
	if claimed != 0 {
		unix.Kill(claimed, unix.SIGKILL)
	}
	return 0
}

// claimedExeced is false once pid shows an environment of its own.
func claimedExeced(pid int) bool {
	env, err := proc.FS.Environ(pid, nil)
	return err != nil || !strings.Contains(string(env), tag.Var+"=CONTAIN:1")
}

func TestClaimChecks(t *testing.T) {
	for _, c := range []struct {
		mode, want string
		argv       []string
	}{
		{"early", "spoke before it was asked", nil},
		{"child", "not by", nil},
		{"unmarked", "is not marked " + tag.DaemonVar + "=1", nil},
		{"argv", "is not contain run -d", []string{"contain", "run", "--", "x"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			name := fmt.Sprintf("@contain-claim-test-%d-%s", os.Getpid(), c.mode)
			l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(l)
			unix.SetsockoptInt(l, unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
			if err := unix.Bind(l, &unix.SockaddrUnix{Name: name}); err != nil {
				t.Fatal(err)
			}
			unix.Listen(l, 1)
			argv := c.argv
			if argv == nil {
				argv = []string{"contain", "run", "-o", "T", "-d", "--", "x"}
			}
			helper := &exec.Cmd{Path: "/proc/self/exe", Args: argv,
				Env: append(os.Environ(), claimHelperVar+"="+c.mode, "CONTAIN_CLAIM_TEST_ADDR="+name), Stderr: os.Stderr}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			defer helper.Wait()
			fd, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			if c.mode == "early" { // its line is there before the question
				unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 3000)
			}
			conn, err := newConn(fd)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.f.Close()
			conn.f.SetDeadline(time.Now().Add(3 * time.Second))
			s := &ClaimServer{} // no grant: every case is refused before one is needed
			err = s.check(conn, helper.Process.Pid)
			conn.send([]byte("no\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check: %v, want %q", err, c.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}
