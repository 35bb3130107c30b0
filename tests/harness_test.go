//go:build linux || darwin || windows

package tests

// The end-to-end harness, one for every OS: TestMain, the helper programs
// this test binary plays, and how a test runs contain and reads what it
// did (containCmd, run, startContain, wantCode, readReport). What an OS
// adds is in harness_unix_test.go (Linux and macOS: contain is built
// here), harness_linux_test.go, harness_darwin_test.go and
// harness_windows_test.go (under Wine: TestWindowsUnderWine builds
// contain.exe on the Linux side and names it in CONTAIN_EXE).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/report"
)

// bin is the contain binary under test: on Linux and macOS built by
// TestMain into a directory that an unprivileged user can read too; on
// Windows contain.exe, named in CONTAIN_EXE.
var bin string

// helperVar, set in a process's environment, makes this test binary play
// the helper program it names instead of running the tests, as Go's
// os/exec tests do: the helper's arguments follow the binary's name.
const helperVar = "CONTAIN_HELPER"

// helpers are the helper programs this binary plays, by name; each
// returns its exit status. The files whose tests use one add it (init).
var helpers = map[string]func(args []string) int{}

// TestMain is the test binary's one entry on every OS: it plays the
// helper that CONTAIN_HELPER names, or else runTests, one per OS, makes
// ready what that OS's tests need and runs them.
func TestMain(m *testing.M) {
	if h := os.Getenv(helperVar); h != "" {
		main, ok := helpers[h]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", h)
			os.Exit(2)
		}
		os.Exit(main(os.Args[1:]))
	}
	os.Exit(runTests(m))
}

// self is this test binary, which plays the helpers.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// result is one finished run of contain.
type result struct {
	stdout, stderr string
	code           int
	signal         syscall.Signal // contain died of it (code is then 128+N)
	pid            int            // of contain
}

// runOpts change how contain is started.
type runOpts struct {
	asNobody bool     // through setpriv, as nobody:nogroup (Linux)
	env      []string // added to the test's environment
	stdin    string
}

// containCmd builds the command line that runs contain with args.
func containCmd(o runOpts, args ...string) *exec.Cmd {
	argv := append([]string{bin}, args...)
	if o.asNobody {
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.env...)
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	return cmd
}

// run runs contain to the end; a run that outlives a minute fails the test.
func run(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	_, wait := startContain(t, o, args...)
	return wait()
}

// wantCode fails the test unless res ended with code.
func wantCode(t *testing.T, res result, code int) {
	t.Helper()
	if res.code != code {
		t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", res.code, code, res.stdout, res.stderr)
	}
}

// startContain starts contain in the background for tests that act while
// it runs; the returned wait gives its result, within a minute.
func startContain(t *testing.T, o runOpts, args ...string) (*exec.Cmd, func() result) {
	t.Helper()
	cmd, _, wait := startContainLive(t, o, args...)
	return cmd, wait
}

// afterRun, where an OS sets it, checks what every finished run left and
// tidies its result (Linux: harness_linux_test.go).
var afterRun func(t *testing.T, cmd *exec.Cmd, res *result, started time.Time)

// startContainLive is startContain that also gives what contain has
// written to stderr so far.
func startContainLive(t *testing.T, o runOpts, args ...string) (*exec.Cmd, func() string, func() result) {
	t.Helper()
	if o.asNobody {
		testtool.Need(t, "setpriv", "util-linux")
	}
	cmd := containCmd(o, args...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A leftover that survives (a failing test) would hold the pipes open:
	// stop reading them soon after contain has exited.
	cmd.WaitDelay = 5 * time.Second
	started := time.Now()
	if err := startCmd(t, cmd); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		cmd.Process.Kill()
	})
	return cmd, stderr.String, func() result {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			t.Fatalf("contain %q did not return within a minute; stderr:\n%s", args, stderr.String())
		}
		res := result{stdout: stdout.String(), stderr: stderr.String(), pid: cmd.Process.Pid}
		if afterRun != nil {
			afterRun(t, cmd, &res, started)
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.code, res.signal = 128+int(ws.Signal()), ws.Signal()
				if ws.CoreDump() {
					t.Errorf("contain dumped core")
				}
			}
		default:
			t.Fatalf("contain %q: %v", args, err)
		}
		return res
	}
}

// startCmd starts cmd, retried up to twice when the new process failed to
// initialise before running any of its code (startFailedEarly: Wine's
// ERROR_INTERNAL_ERROR); contain is not yet running then, so a retry
// hides nothing of contain's. Any other error is returned.
func startCmd(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	for try := 1; ; try++ {
		err := cmd.Start()
		if err == nil || try == 3 || !startFailedEarly(err) {
			return err
		}
		t.Logf("starting %s failed (%v); Wine's process start-up, not contain: trying again", cmd.Path, err)
		fresh := exec.Command(cmd.Path, cmd.Args[1:]...)
		fresh.Env, fresh.Dir, fresh.Stdin, fresh.Stdout, fresh.Stderr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
		fresh.SysProcAttr, fresh.WaitDelay = cmd.SysProcAttr, cmd.WaitDelay
		*cmd = *fresh
	}
}

// readReport reads the report contain wrote to path.
func readReport(t *testing.T, path string) report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if r.Version != 2 {
		t.Errorf("version %d, want 2", r.Version)
	}
	return r
}

// syncBuffer is a buffer that can be read while contain writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
