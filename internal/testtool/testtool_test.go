package testtool

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records how a test would have ended.
type fakeTB struct {
	testing.TB
	skipped, failed, logged string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skip(a ...any)                  { f.skipped = fmt.Sprint(a...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }
func (f *fakeTB) Errorf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }
func (f *fakeTB) Logf(format string, a ...any)   { f.logged = fmt.Sprintf(format, a...) }

// A missing program: skipped with its Debian package without CI, failed
// with CI=true (on Linux, where .ci/run installs everything).
func TestNeedMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, ci := range []string{"", "false", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{}
		if p := Need(f, "zsh", "zsh"); p != "" {
			t.Errorf("CI=%q: Need found %q on an empty PATH", ci, p)
		}
		g := &fakeTB{}
		if Have(g, "redis-server", "redis-server") {
			t.Errorf("CI=%q: Have found redis-server on an empty PATH", ci)
		}
		required := ci == "true" && runtime.GOOS == "linux"
		if required != Required() {
			t.Errorf("CI=%q: Required() = %v", ci, Required())
		}
		switch {
		case required && (f.failed == "" || f.skipped != "" || g.failed == ""):
			t.Errorf("CI=%q: not failed: %+v %+v", ci, f, g)
		case !required && (f.skipped == "" || f.failed != "" || g.failed != "" || g.logged == ""):
			t.Errorf("CI=%q: not skipped: %+v %+v", ci, f, g)
		}
		for _, msg := range []string{f.failed + f.skipped, g.failed + g.logged} {
			if !strings.Contains(msg, "(Debian package ") {
				t.Errorf("CI=%q: %q does not name the package", ci, msg)
			}
		}
	}
}

func TestNeedFound(t *testing.T) {
	f := &fakeTB{}
	if p := Need(f, "go", "golang"); p == "" || f.skipped != "" || f.failed != "" {
		t.Errorf("Need(go) = %q, %+v", p, f)
	}
}
