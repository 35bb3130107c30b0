package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseProcMount: the options of the procfs mounted at /proc, the
// mount on top, in every spelling kernels show: numbers (older kernels),
// words (5.8 and later), gid= and subset=pid; a /proc elsewhere, or a
// mount that is not procfs, is not taken.
func TestParseProcMount(t *testing.T) {
	const host = "22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	for _, c := range []struct {
		name, info string
		want       ProcMount
		found      bool
	}{
		{"plain", host, ProcMount{GID: -1}, true},
		{"words", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible\n", ProcMount{HidePID: 2, GID: -1}, true},
		{"noaccess", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,hidepid=noaccess\n", ProcMount{HidePID: 1, GID: -1}, true},
		{"ptraceable", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,hidepid=ptraceable\n", ProcMount{HidePID: 4, GID: -1}, true},
		{"numbers", "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=2,gid=27\n", ProcMount{HidePID: 2, GID: 27}, true},
		{"off", "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=off\n", ProcMount{GID: -1}, true},
		{"gid and words", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,gid=65534,hidepid=invisible\n", ProcMount{HidePID: 2, GID: 65534}, true},
		{"subset", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,subset=pid\n", ProcMount{GID: -1, SubsetPID: true}, true},
		{"both", host + "63 45 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible,subset=pid\n", ProcMount{HidePID: 2, GID: -1, SubsetPID: true}, true},
		{"top wins", "63 45 0:39 / /proc rw - proc proc rw,hidepid=2\n" + host, ProcMount{GID: -1}, true},
		{"elsewhere", host + "70 45 0:40 / /srv/proc rw - proc proc rw,hidepid=2\n", ProcMount{GID: -1}, true},
		{"not procfs", host + "71 22 0:41 / /proc rw - tmpfs tmpfs rw,hidepid=2\n", ProcMount{GID: -1}, true},
		{"none", "30 1 8:1 / / rw - ext4 /dev/sda1 rw\n", ProcMount{}, false},
		{"garbage", "what\n\n - proc\n", ProcMount{}, false},
	} {
		got, found := ParseProcMount([]byte(c.info), "/proc")
		if got != c.want || found != c.found {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, found, c.want, c.found)
		}
	}
	info := `80 1 0:50 / /srv/my\040proc rw - proc proc rw,hidepid=1` + "\n"
	if got, found := ParseProcMount([]byte(info), "/srv/my proc"); !found || got.HidePID != 1 {
		t.Errorf("escaped mount point: %+v %v", got, found)
	}
}

// TestHidesFrom: hidepid hides other users' processes from anyone but
// root and the members of the mount's gid= group.
func TestHidesFrom(t *testing.T) {
	m := ProcMount{HidePID: 2, GID: 27}
	switch {
	case !m.HidesFrom(65534, []int{65534}):
		t.Error("nobody sees every process")
	case m.HidesFrom(0, nil):
		t.Error("root does not see every process")
	case m.HidesFrom(1000, []int{1000, 27}):
		t.Error("a member of gid= does not see every process")
	case ProcMount{GID: -1}.HidesFrom(65534, nil):
		t.Error("a plain /proc hides processes")
	case !(ProcMount{HidePID: 1, GID: -1}).HidesFrom(65534, nil):
		t.Error("hidepid=1 hides nothing")
	}
	if got := (ProcMount{HidePID: 2}).Option(); got != "hidepid=2" {
		t.Errorf("option %q", got)
	}
}

// TestHiddenErr: a process whose /proc/PID is absent or unreadable is
// hidden (alive) when kill(PID, 0) answers EPERM, gone when it answers
// ESRCH; another failure of /proc is not taken for either.
func TestHiddenErr(t *testing.T) {
	defer func(f func(int) error) { signalZero = f }(signalZero)
	answers := map[int]error{10: unix.EPERM, 11: unix.ESRCH, 12: nil}
	signalZero = func(pid int) error { return answers[pid] }
	notExist := &os.PathError{Op: "open", Path: "/proc/10/stat", Err: unix.ENOENT}
	denied := &os.PathError{Op: "open", Path: "/proc/10/stat", Err: unix.EACCES}
	for _, c := range []struct {
		pid    int
		err    error
		hidden bool
	}{
		{10, notExist, true}, {10, denied, true}, {10, &os.PathError{Op: "open", Path: "/proc/10/stat", Err: unix.EPERM}, true},
		{11, notExist, false}, {12, notExist, false},
		{10, nil, false}, {10, fmt.Errorf("bad format"), false}, {0, notExist, false},
	} {
		h := hiddenErr(c.pid, c.err)
		if (h != nil) != c.hidden {
			t.Errorf("PID %d, %v: %v, want hidden %v", c.pid, c.err, h, c.hidden)
		}
		if h != nil && (!errors.Is(h, ErrHidden) || !strings.Contains(h.Error(), "PID 10 runs as another user")) {
			t.Errorf("PID %d: %v", c.pid, h)
		}
		if why := hiddenUnseen(h); (why != "") != c.hidden || c.hidden && !strings.Contains(why, "its originator, PID 10, runs as another user") {
			t.Errorf("PID %d: unseen %q", c.pid, why)
		}
	}
	if why := hiddenUnseen(notExist); why != "" {
		t.Errorf("not hidden: %q", why)
	}
}

// TestBootByClock: the boot time from the clocks is /proc/stat's, to the
// second, where there is a /proc/stat.
func TestBootByClock(t *testing.T) {
	want, err := FS.BootTime()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	got, err := bootByClock()
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Sub(want); d < -2e9 || d > 2e9 {
		t.Errorf("boot at %v by the clocks, %v by /proc/stat", got, want)
	}
}
