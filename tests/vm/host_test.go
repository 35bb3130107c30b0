//go:build linux && !containvm

package vm

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// vmTimeout bounds one boot, the tests inside included: the issue's
// budget for the VM tests in CI is five minutes.
const vmTimeout = 270 * time.Second

// TestKernel boots Debian's kernel under QEMU (TCG: no KVM needed) with an
// initramfs packed here — busybox, a static contain, and this package's
// in-VM tests built with -tags containvm — and runs those tests inside, as
// root and as an ordinary user, on a cgroup v2 hierarchy with the memory,
// pids and cpu controllers: the kernel path of the whole-tree limits,
// which the machines the rest of the suite runs on cannot give (a hybrid
// layout has no v2 controllers). Their output comes back on the serial
// console. CONTAIN_VM_RUN=REGEXP runs only some of them.
func TestKernel(t *testing.T) {
	qemu, kernel := vmTools(t)
	busybox := testtool.StaticBusybox(t) // the initramfs has no libc
	dir := t.TempDir()
	contain, vmtest := buildForVM(t, dir)
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd.gz")
	if err := packInitramfs(initrd, contain, vmtest, bb); err != nil {
		t.Fatal(err)
	}
	bootVM(t, qemu, kernel, initrd, 1024, "console=ttyS0 quiet loglevel=1 panic=-1")
}

// vmTools finds QEMU and a kernel to boot, and checks that go can build
// what runs inside.
func vmTools(t *testing.T) (qemu, kernel string) {
	if runtime.GOARCH != "amd64" {
		testtool.Missing(t, "the VM boots an x86-64 kernel; this is "+runtime.GOARCH)
	}
	qemu = testtool.Need(t, "qemu-system-x86_64", "qemu-system-x86")
	kernel = newestKernel(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is not on PATH: the VM's contain and tests are built with it")
	}
	// QEMU takes every core: not beside the end-to-end tests, whose CPU
	// shares and races it would disturb (go test runs packages side by
	// side).
	release, err := testtool.HoldMachine()
	if err != nil {
		t.Logf("running beside other test packages (cannot lock: %v)", err)
	}
	t.Cleanup(release)
	return qemu, kernel
}

// buildForVM builds a static contain and this package's in-VM tests.
func buildForVM(t *testing.T, dir string) (contain, vmtest []byte) {
	c, v := filepath.Join(dir, "contain"), filepath.Join(dir, "vmtest")
	build(t, "build", "-o", c, "github.com/contain-cli/contain")
	build(t, "test", "-c", "-tags", "containvm", "-o", v, "github.com/contain-cli/contain/tests/vm")
	var err1, err2 error
	contain, err1 = os.ReadFile(c)
	vmtest, err2 = os.ReadFile(v)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return contain, vmtest
}

// bootVM boots kernel with initrd and mem MiB, and fails the test unless
// the tests inside passed: the console must say how they exited, with no
// test failed (or skipped, in CI) and one passed at least.
func bootVM(t *testing.T, qemu, kernel, initrd string, mem int, appendLine string) {
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	if run := os.Getenv("CONTAIN_VM_RUN"); run != "" {
		if strings.ContainsAny(run, " \"'") {
			t.Fatalf("CONTAIN_VM_RUN=%q: no spaces or quotes (it goes on the kernel's command line)", run)
		}
		appendLine += " CONTAIN_VM_RUN=" + run
	}
	measure := os.Getenv("CONTAIN_VM_MEASURE") == "1"
	if measure {
		appendLine += " CONTAIN_VM_MEASURE=1" // tests/vm/measure_test.go
	}
	cmd := exec.CommandContext(ctx, qemu, "-accel", "tcg", "-cpu", "max", "-m", strconv.Itoa(mem), "-smp", "2",
		"-kernel", kernel, "-initrd", initrd, "-append", appendLine,
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(100 * time.Millisecond)
	console := strings.ReplaceAll(out.String(), "\r\n", "\n")
	t.Logf("QEMU ran %v (%s); the serial console:\n%s", took, kernel, console)
	if ctx.Err() != nil {
		t.Fatalf("the VM did not power off within %v", vmTimeout)
	}
	if err != nil {
		t.Fatalf("qemu: %v", err)
	}
	m := regexp.MustCompile(`(?m)^contain-vm: tests exited (\d+)\s*$`).FindStringSubmatch(console)
	if m == nil {
		t.Fatal("the VM never said how its tests ended (see the console above)")
	}
	var failed, skipped []string
	for _, l := range strings.Split(console, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "--- FAIL"):
			failed = append(failed, l)
		case strings.HasPrefix(l, "--- SKIP"):
			skipped = append(skipped, l)
		}
	}
	if m[1] != "0" || len(failed) > 0 {
		t.Errorf("the tests in the VM failed (exit %s):\n%s", m[1], strings.Join(failed, "\n"))
	}
	if len(skipped) > 0 && testtool.Required() {
		t.Errorf("tests skipped in the VM, where nothing may skip:\n%s", strings.Join(skipped, "\n"))
	}
	if !strings.Contains(console, "--- PASS") {
		t.Error("no test passed in the VM")
	}
}

// newestKernel is the newest /boot/vmlinuz-*, readable by this user.
func newestKernel(t *testing.T) string {
	ks, _ := filepath.Glob("/boot/vmlinuz-*")
	slices.Sort(ks)
	for i := len(ks) - 1; i >= 0; i-- {
		if f, err := os.Open(ks[i]); err == nil {
			f.Close()
			return ks[i]
		}
	}
	if len(ks) > 0 {
		testtool.Missing(t, fmt.Sprintf("%s cannot be read by this user (Debian's kernels are root's to read)", ks[len(ks)-1]))
	} else {
		testtool.Missing(t, "no kernel in /boot (Debian package linux-image-cloud-amd64)")
	}
	return ""
}

// build runs go with args, without cgo (the initramfs has no libc), from
// the module's root.
func build(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// initScript is the VM's PID 1: it mounts what contain needs, a cgroup v2
// hierarchy among it, runs the tests and powers off. The kernel hands it
// the CONTAIN_VM_* words of its command line as environment variables.
const initScript = `#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
chmod 1777 /tmp
echo "contain-vm: Linux $(cat /proc/sys/kernel/osrelease), controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
cd /tmp
set -- -test.timeout 240s -test.skip '^(TestSystemd|TestMeasure)'
if [ -n "$CONTAIN_VM_MEASURE" ]; then set -- -test.timeout 240s -test.run '^TestMeasure$'; fi
if [ -n "$CONTAIN_VM_RUN" ]; then set -- "$@" -test.run "$CONTAIN_VM_RUN"; fi
CONTAIN_IN_VM=1 /bin/vmtest -test.v "$@"
echo "contain-vm: tests exited $?"
poweroff -f
`

// packInitramfs writes a gzipped newc cpio archive: busybox with a link
// for each applet the VM uses, /init, /dev/console, the users, contain and
// the in-VM tests.
func packInitramfs(path string, contain, vmtest, busybox []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	a := &cpioWriter{w: gz}
	for _, d := range []string{"dev", "proc", "sys", "tmp", "root", "home", "home/user", "etc", "bin"} {
		a.dir(d, 0o755)
	}
	a.device("dev/console", 0o600, 5, 1)
	a.file("init", 0o755, []byte(initScript))
	a.file("bin/busybox", 0o755, busybox)
	for _, l := range []string{"sh", "mount", "mkdir", "cat", "echo", "chmod", "poweroff", "sleep", "true", "false", "kill", "ls", "env", "ps"} {
		a.symlink("bin/"+l, "busybox")
	}
	a.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
	a.file("etc/group", 0o644, []byte("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n"))
	a.file("bin/contain", 0o755, contain)
	a.file("bin/vmtest", 0o755, vmtest)
	a.end()
	if a.err != nil {
		return a.err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// cpioWriter writes the newc ("070701") format the kernel unpacks: a
// header of hexadecimal fields, the name, the data, each padded to four
// bytes, and a TRAILER!!! entry. Of two entries with one name, the
// kernel keeps the later.
type cpioWriter struct {
	w   io.Writer
	n   int64
	ino int
	err error
}

const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
	cpioChar    = 0o020000
	cpioBlock   = 0o060000
	cpioFifo    = 0o010000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) entry(name string, mode, uid, gid, rdevMajor, rdevMinor int, data []byte) {
	c.ino++
	nlink := 1
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	c.write(fmt.Appendf(nil, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, uid, gid, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) dir(name string, perm int) { c.entry(name, cpioDir|perm, 0, 0, 0, 0, nil) }
func (c *cpioWriter) file(name string, perm int, b []byte) {
	c.entry(name, cpioFile|perm, 0, 0, 0, 0, b)
}
func (c *cpioWriter) symlink(name, target string) {
	c.entry(name, cpioSymlink|0o777, 0, 0, 0, 0, []byte(target))
}
func (c *cpioWriter) device(name string, perm, major, minor int) {
	c.entry(name, cpioChar|perm, 0, 0, major, minor, nil)
}

func (c *cpioWriter) end() { c.entry("TRAILER!!!", 0, 0, 0, 0, 0, nil) }
