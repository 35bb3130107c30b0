//go:build linux || darwin

package tests

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// runTests builds contain, and what else this OS's tests need (prepare),
// then runs the tests (TestMain).
func runTests(m *testing.M) int {
	// Most of these tests wait (on timeouts, grace periods, processes
	// ending), few use a core: by default they run eight at a time, not
	// one per core (-parallel, given, wins).
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "8")
	}
	// Not beside tests/vm's QEMU, which takes every core: the CPU shares
	// and races measured here would fail.
	if release, err := testtool.HoldMachine(); err == nil {
		defer release()
	} else {
		fmt.Fprintf(os.Stderr, "tests: running beside other test packages (cannot lock: %v)\n", err)
	}
	dir, err := os.MkdirTemp("", "contain-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "contain")
	if err := goBuild(bin, ".", ".."); err != nil {
		fmt.Fprintln(os.Stderr, "building contain:", err)
		return 1
	}
	end, err := prepare(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer end()
	return m.Run()
}

// goBuild builds package pkg of the module at dir into out.
func goBuild(out, dir, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %v\n%s", pkg, dir, err, msg)
	}
	return nil
}

// alive reports whether pid is a process that has not exited: a zombie is
// dead (the init of some machines reaps orphaned zombies late).
func alive(pid int) bool { return testtool.Alive(pid) }

// startFailedEarly: a start that fails is contain's failure here.
func startFailedEarly(error) bool { return false }
