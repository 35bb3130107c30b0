//go:build linux || darwin || windows

package proc

import (
	"os"
	"reflect"
	"testing"

	"github.com/contain-cli/contain/session"
)

// TestIsContainRun: what makes the process a CONTAIN tag names a contain
// run, from its executable and arguments.
func TestIsContainRun(t *testing.T) {
	for _, c := range []struct {
		same bool
		exe  string
		argv []string
		want bool
	}{
		{false, "/usr/local/bin/contain", []string{"contain", "run", "--", "make"}, true},
		{false, "/opt/homebrew/bin/contain", []string{"/opt/homebrew/bin/contain", "timeout", "5", "make"}, true},
		{false, "/usr/bin/contain (deleted)", []string{"contain", "run", "make"}, true}, // upgraded since it started
		{false, `C:\Tools\CONTAIN.EXE`, []string{"contain", "run", "make"}, true},
		{false, "/usr/local/bin/contain", nil, true},                              // arguments unread
		{true, "/tmp/go-build/b001/exe/x", []string{"x", "run", "make"}, true},    // this contain's binary, renamed
		{false, "/usr/local/bin/contain", []string{"contain", "ps"}, false},       // not a run
		{false, "/usr/local/bin/contain", []string{"contain-guard", "-c"}, false}, // the guard
		{false, "/usr/local/bin/contain", []string{"contain"}, false},
		{false, "/usr/bin/sleep", []string{"contain", "run", "x"}, false}, // argv is the process's own claim
		{false, "/usr/bin/containx", []string{"containx", "run"}, false},
		{false, "", []string{"/usr/bin/contain", "run"}, true}, // executable unread: argv[0]
		{false, "", []string{"sleep", "run"}, false},
		{false, "", nil, false},
	} {
		if got := IsContainRun(c.same, c.exe, c.argv); got != c.want {
			t.Errorf("IsContainRun(%v, %q, %q) = %v, want %v", c.same, c.exe, c.argv, got, c.want)
		}
	}
}

// TestMacPinOriginatorClaimed: on macOS, what stop checks of the pinned
// originator comes from kern.proc.pid (its user) and kern.procargs2 (its
// executable and arguments).
func TestMacPinOriginatorClaimed(t *testing.T) {
	f := newFakeMac(MacProc{PID: 90, Start: 1000, RUID: 501}, MacProc{PID: 91, Start: 1000, RUID: 501})
	f.args[90] = procargs2([]string{"contain", "run", "make"}, []string{"HOME=/"}, false)
	f.args[91] = procargs2([]string{"sleep", "300"}, []string{"HOME=/"}, false)
	m := f.sys()
	me := session.Reaper{UID: 501}
	o, err := m.pinOriginator(90, 2000, me)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Claimed{PID: 90, UID: 501, User: "u501", Start: 1000, Contain: true, Executable: "/usr/local/bin/contain"}
	if got := o.Claimed(); !reflect.DeepEqual(got, want) {
		t.Errorf("contain run: %+v, want %+v", got, want)
	}
	o, err = m.pinOriginator(91, 2000, me)
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Claimed(); c.Contain || c.Executable != "/usr/local/bin/sleep" || !reflect.DeepEqual(o.Argv, []string{"sleep", "300"}) {
		t.Errorf("sleep: %+v %q", c, o.Argv)
	}
	if why := session.Implausible(session.ContainTool, o.Claimed(), []session.Process{{PID: 92, UID: 501, Start: 1500}}, me); why == "" {
		t.Error("a sleep named by a CONTAIN tag is plausible")
	}
}

// TestSameExecutable: this test binary is the same file as itself, and
// not as another.
func TestSameExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	if !sameExecutable(self) {
		t.Errorf("%s is not the same file as itself", self)
	}
	// Not t.TempDir: Wine cannot always remove it.
	other, err := os.CreateTemp("", "contain-same-exe-")
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	defer os.Remove(other.Name())
	if sameExecutable(other.Name()) || sameExecutable("") || sameExecutable("relative/contain") {
		t.Error("another file, no path or a relative one is the same file")
	}
}
