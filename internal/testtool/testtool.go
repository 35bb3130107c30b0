// Package testtool is how a test says it needs a program beyond Go (a
// shell, mandoc, tmux, Wine, a daemon): where it is missing, the test is
// skipped with the Debian package to install, so that the README's test
// command passes on a fresh machine with only Go; in CI, whose .ci/run
// installs every one of them, a missing program is a failure, never a
// silent skip.
package testtool

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Required reports whether a missing program fails the test instead of
// skipping it: the environment variable CI is set (GitHub Actions and most
// CI systems set CI=true), on Linux, where .ci/run installs every program
// the tests use. The macOS and Windows runners of the workflow have only
// some (no fish, no mandoc on Windows): there a missing one is skipped.
// CI=false or CI=0 counts as unset.
func Required() bool {
	switch os.Getenv("CI") {
	case "", "false", "0":
		return false
	}
	return runtime.GOOS == "linux"
}

// Need returns the path of program, or ends the test: skipped, naming
// Debian's pkg, or failed where Required.
func Need(t testing.TB, program, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		Missing(t, fmt.Sprintf("%s is not installed (Debian package %s)", program, pkg))
	}
	return p
}

// Have reports whether program is installed, for a test that goes on
// without it (one daemon among several): without it, a line in the test's
// log naming Debian's pkg, or an error where Required.
func Have(t testing.TB, program, pkg string) bool {
	t.Helper()
	if _, err := exec.LookPath(program); err == nil {
		return true
	}
	why := fmt.Sprintf("%s is not installed (Debian package %s)", program, pkg)
	if Required() {
		t.Errorf("%s; CI must have it (.ci/run installs it)", why)
	} else {
		t.Logf("%s: leaving it out", why)
	}
	return false
}

// Missing ends a test that cannot run for want of what why says (a
// program, a prepared release): skipped, or failed where Required.
func Missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s; CI must have it (.ci/run installs it)", why)
		return
	}
	t.Skip(why)
}

// sleeperArg marks the run of a test binary that is the sleeper.
const sleeperArg = "contain-sleeper"

// Sleeper is argv that runs this test binary asleep for 30 s, for the tests
// that find or reap it by its tag: the package's TestSleeper must call
// Sleep. Not /bin/sleep: macOS hides the environment of Apple's binaries
// from other processes.
func Sleeper() []string {
	return []string{os.Args[0], "-test.run=^TestSleeper$", "-test.count=1", sleeperArg}
}

// Sleep is the body of a package's TestSleeper: it sleeps when this run is
// the sleeper, and skips the test otherwise.
func Sleep(t *testing.T) {
	if flag.Arg(0) != sleeperArg {
		t.Skip("only the sleeper of the tests that find or reap it")
	}
	time.Sleep(30 * time.Second)
	os.Exit(0)
}

// StartSleeper starts the Sleeper with attr and env added, and ends it when
// the test does.
func StartSleeper(t *testing.T, attr *syscall.SysProcAttr, env ...string) *exec.Cmd {
	t.Helper()
	argv := Sleeper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}
