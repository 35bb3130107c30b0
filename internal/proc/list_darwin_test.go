package proc

// These tests run only on macOS (the CI workflow's runners): each checks
// one kernel behaviour that list_darwin.go and reap_darwin.go rely on and
// that could not be run where they were written.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/session"
)

// sleeper runs long, for the tests that find it (testtool.Sleeper).
var sleeper = testtool.Sleeper()

// TestSleeper is the sleeper when run as it.
func TestSleeper(t *testing.T) { testtool.Sleep(t) }

// TestDarwinListTagged: kern.proc.all and kern.procargs2 give a tagged
// child with its argv, its tag, the daemon mark, its user and its start
// time in microseconds.
func TestDarwinListTagged(t *testing.T) {
	value := "DARWINPS:" + strconv.Itoa(os.Getpid())
	before := time.Now()
	cmd := testtool.StartSleeper(t, nil, "RUNNING_PROCESS_ORIGINATOR="+value, "RUNNING_PROCESS_IS_DAEMON=1")
	var p session.Process
	for i := 0; i < 200 && p.PID == 0; i++ { // until it has exec'd
		l, err := ListTagged()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range l.Procs {
			if q.PID == cmd.Process.Pid && q.Value == value {
				p = q
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !reflect.DeepEqual(p.Argv, sleeper) {
		t.Errorf("argv %q, want %q", p.Argv, sleeper)
	}
	if !p.Daemon || p.PPID != os.Getpid() || p.UID != os.Getuid() || p.User == "" || p.Comm == "" {
		t.Errorf("%+v", p)
	}
	if p.Started.Before(before.Add(-time.Second)) || p.Started.After(time.Now().Add(time.Second)) || p.Start != uint64(p.Started.UnixMicro()) {
		t.Errorf("started %v (%d), between %v and now", p.Started, p.Start, before)
	}
	if p.Start%1e6 == 0 {
		t.Logf("start time %d: a whole second (possible, but are the microseconds there?)", p.Start)
	}
}

// TestDarwinLookup: a live PID, a PID that no process has (above PID_MAX,
// 99998), and the error kern.proc.pid gives for the latter.
func TestDarwinLookup(t *testing.T) {
	o, err := LookupOriginator(0, os.Getpid())
	if err != nil || !o.Exists || o.Zombie || o.Start == 0 || o.Start > uint64(time.Now().UnixMicro()) {
		t.Errorf("self: %+v %v", o, err)
	}
	_, rawErr := Darwin.one(99999)
	t.Logf("kern.proc.pid of a missing PID: %v (expected EIO)", rawErr)
	if !errors.Is(rawErr, unix.EIO) {
		t.Errorf("kern.proc.pid of a missing PID: %v, not EIO", rawErr)
	}
	o, err = LookupOriginator(0, 99999)
	if err != nil || o.Exists {
		t.Errorf("missing: %+v %v", o, err)
	}
	if a := Ancestors(); !a[os.Getppid()] || !a[1] {
		t.Errorf("ancestors %v lack the parent %d or launchd", a, os.Getppid())
	}
}

// TestDarwinZombie: an exited child not yet waited for is in kern.proc.all
// and kern.proc.pid as a zombie (p_stat SZOMB), with its start time.
func TestDarwinZombie(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	for i := 0; ; i++ {
		o, err := LookupOriginator(0, pid)
		if err == nil && o.Zombie {
			if o.Start == 0 {
				t.Errorf("a zombie without a start time")
			}
			break
		}
		if i == 500 {
			t.Fatalf("never seen as a zombie: %+v %v", o, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	procs, err := Darwin.All()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		if p.PID == pid {
			found = p.Zombie()
		}
	}
	if !found {
		t.Error("kern.proc.all does not list the zombie as SZOMB")
	}
	cmd.Wait()
	if o, err := LookupOriginator(0, pid); err != nil || o.Exists {
		t.Errorf("after wait: %+v %v", o, err)
	}
}

// TestDarwinStopped: a process sent SIGSTOP shows p_stat SSTOP.
func TestDarwinStopped(t *testing.T) {
	cmd := testtool.StartSleeper(t, nil)
	pid := cmd.Process.Pid
	unix.Kill(pid, unix.SIGSTOP)
	for i := 0; !Stopped(pid); i++ {
		if i == 200 {
			p, _, err := Darwin.Lookup(pid)
			t.Fatalf("p_stat %d after SIGSTOP (%v)", p.Stat, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	unix.Kill(pid, unix.SIGCONT)
}

// TestDarwinRefusedAndHidden: another user's process (launchd) is refused
// with EINVAL unless contain is root; Apple's /bin/sleep of the same user
// may have its environment hidden. Either way it is counted, not guessed.
func TestDarwinRefusedAndHidden(t *testing.T) {
	_, err := Darwin.Args(1)
	t.Logf("kern.procargs2 of launchd as uid %d: %v", os.Geteuid(), err)
	if os.Geteuid() != 0 && !errors.Is(err, unix.EINVAL) {
		t.Errorf("kern.procargs2 of launchd: %v, want EINVAL", err)
	}
	value := "DARWINHIDDEN:" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("/bin/sleep", "30")
	cmd.Env = append(os.Environ(), "RUNNING_PROCESS_ORIGINATOR="+value)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond) // exec'd
	l, err := ListTagged()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unreadable: %v", l.Unreadable)
	if os.Geteuid() != 0 && l.Unreadable[reasonDenied] == 0 {
		t.Error("no process of another user counted as permission denied")
	}
	for _, p := range l.Procs {
		if p.PID == cmd.Process.Pid {
			t.Logf("/bin/sleep's environment is readable here (value %q)", p.Value)
			if p.Value != value {
				t.Errorf("value %q, want %q", p.Value, value)
			}
			return
		}
	}
	t.Logf("/bin/sleep's environment is hidden, as docs/GUIDE.md says (macOS)")
	if l.Unreadable[reasonHidden] == 0 {
		t.Error("/bin/sleep is neither listed nor counted as hidden")
	}
}

// TestDarwinProcArgs2: contain's one read of kern.procargs2, into a buffer
// of ARG_MAX, gives what x/sys's SysctlRaw gives (which also checks the
// signature of the sysctl it borrows from x/sys), and a strings area
// larger than ARG_MAX, which SysctlRaw always gets EINVAL for, is told as
// such at once, without the wait for an exit that a refusal costs.
func TestDarwinProcArgs2(t *testing.T) {
	for _, pid := range []int{os.Getpid(), testtool.StartSleeper(t, nil).Process.Pid} {
		want, err := unix.SysctlRaw("kern.procargs2", pid)
		got, err2 := procArgs2(pid)
		if err != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("PID %d: procArgs2 = %d bytes, %v; SysctlRaw = %d bytes, %v", pid, len(got), err2, len(want), err)
		}
	}
	// argv and the environment may take ARG_MAX with their pointers; the
	// exec path and the apple strings come on top. An empty environment,
	// and arguments of ARG_MAX less 64 bytes.
	n := argMax() - 64
	for _, s := range sleeper {
		n -= len(s) + 1
	}
	cmd := exec.Command(sleeper[0], append(slices.Clone(sleeper[1:]), strings.Repeat("a", n-1))...)
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.E2BIG) {
			t.Skipf("the kernel counts more than this test thinks: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	var err error
	for i := 0; i < 200; i++ { // until it has exec'd
		if _, err = procArgs2(pid); errors.Is(err, errArgsTooLarge) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, errArgsTooLarge) {
		t.Fatalf("procArgs2 of %d bytes of arguments: %v, want errArgsTooLarge", n, err)
	}
	_, err = unix.SysctlRaw("kern.procargs2", pid)
	t.Logf("SysctlRaw: %v", err)
	p, found, err := Darwin.Lookup(pid)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	began := time.Now()
	if a, reason := Darwin.ReadArgs(p); a != nil || reason != reasonTooLarge {
		t.Errorf("readArgs = %v, %q; want %q", a, reason, reasonTooLarge)
	}
	if d := time.Since(began); d > 15*time.Millisecond {
		t.Logf("readArgs took %v", d) // the wait for an exit is 20 ms
	}
}
