//go:build darwin

package procargs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRecordFixtures writes what a real macOS kernel returns, so that the
// decoders' tests can be checked against real bytes. It runs only when
// CONTAIN_RECORD_FIXTURES names a directory (the CI workflow's optional
// fixtures job sets it, runs it once as the runner's user and once as root,
// and uploads the directory); it fails only when a sysctl or a file fails.
//
// Written there:
//
//	procargs2-self.bin   kern.procargs2 of this test process
//	procargs2-sleep.bin  kern.procargs2 of a child /bin/sleep (Apple-signed:
//	                     its environment is hidden from every other process,
//	                     root's included, unless System Integrity Protection
//	                     is off: xnu kern_sysctl.c, cs_restricted)
//	proc-pid-self.bin    kern.proc.pid of this process (one kinfo_proc)
//	proc-pid-sleep.bin   kern.proc.pid of the child
//	proc-all.bin         kern.proc.all: every kinfo_proc, the two above among them
//	fixtures.txt         what was recorded: OS, arch, uid, PIDs, sizes, the
//	                     child's argv and the variables this test gave it
func TestRecordFixtures(t *testing.T) {
	dir := os.Getenv("CONTAIN_RECORD_FIXTURES")
	if dir == "" {
		t.Skip("CONTAIN_RECORD_FIXTURES is not set: nothing to record")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	const tag = "RUNNING_PROCESS_ORIGINATOR=contain-fixture:1"
	sleep := exec.Command("/bin/sleep", "120")
	sleep.Env = append(os.Environ(), tag, "CONTAIN_FIXTURE_VAR=with spaces and = signs")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sleep.Process.Kill()
		sleep.Wait()
	}()
	// Start returns once the child has executed /bin/sleep (os/exec waits
	// for the exec); the pause is only a margin.
	time.Sleep(200 * time.Millisecond)

	self, child := os.Getpid(), sleep.Process.Pid
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", name, len(b))
	}
	for _, p := range []struct {
		name string
		pid  int
	}{{"self", self}, {"sleep", child}} {
		b, err := unix.SysctlRaw("kern.procargs2", p.pid)
		if err != nil {
			t.Fatalf("kern.procargs2 of %s (PID %d): %v", p.name, p.pid, err)
		}
		write("procargs2-"+p.name+".bin", b)
		b, err = unix.SysctlRaw("kern.proc.pid", p.pid)
		if err != nil {
			t.Fatalf("kern.proc.pid of %s (PID %d): %v", p.name, p.pid, err)
		}
		write("proc-pid-"+p.name+".bin", b)
	}
	all, err := procAll()
	if err != nil {
		t.Fatalf("kern.proc.all: %v", err)
	}
	write("proc-all.bin", all)

	var meta strings.Builder
	fmt.Fprintf(&meta, "GOARCH=%s\n", runtime.GOARCH)
	for _, name := range []string{"kern.osproductversion", "kern.osrelease", "kern.version", "hw.machine"} {
		v, err := unix.Sysctl(name)
		if err != nil {
			v = "(" + err.Error() + ")"
		}
		fmt.Fprintf(&meta, "%s=%s\n", name, strings.TrimSpace(v))
	}
	fmt.Fprintf(&meta, "uid=%d euid=%d\n", os.Getuid(), os.Geteuid())
	fmt.Fprintf(&meta, "self.pid=%d self.argv=%q\n", self, os.Args)
	fmt.Fprintf(&meta, "sleep.pid=%d sleep.argv=%q sleep.added_env=%q\n", child, sleep.Args,
		sleep.Env[len(sleep.Env)-2:])
	fmt.Fprintf(&meta, "sizeof(unix.KinfoProc)=%d proc-all.records=%d\n",
		unsafe.Sizeof(unix.KinfoProc{}), len(all)/int(unsafe.Sizeof(unix.KinfoProc{})))
	write("fixtures.txt", []byte(meta.String()))
	t.Logf("recorded in %s:\n%s", dir, meta.String())
}

// procAll reads kern.proc.all, again if the table grew between the size
// query and the read (ENOMEM).
func procAll() ([]byte, error) {
	var err error
	for i := 0; i < 5; i++ {
		var b []byte
		if b, err = unix.SysctlRaw("kern.proc.all"); !errors.Is(err, unix.ENOMEM) {
			return b, err
		}
	}
	return nil, err
}
