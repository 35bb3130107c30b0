//go:build linux && !containvm

package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// systemdPackages make the systemd VM: Debian bookworm's minimal base with
// systemd as PID 1, D-Bus for logind, and pam_systemd for the user's
// manager.
var systemdPackages = []string{"systemd", "systemd-sysv", "dbus", "libpam-systemd"}

// TestSystemd boots Debian with systemd (its root file system made by
// mmdebstrap from Debian's packages, cached in ~/.cache/contain, and held
// in RAM as an initramfs) and runs the TestSystemd* tests inside, from a
// service's cgroup, which holds other processes: where contain cannot
// enable controllers itself, it asks systemd for a scope, the system
// manager as root and the user's manager (user@1000.service, started by
// lingering) as an ordinary user.
func TestSystemd(t *testing.T) {
	qemu, kernel := vmTools(t)
	mmdebstrap := testtool.Need(t, "mmdebstrap", "mmdebstrap")
	if os.Geteuid() != 0 {
		testtool.Missing(t, "mmdebstrap makes the VM's root file system as root")
	}
	rootfs := systemdRootfs(t, mmdebstrap)
	dir := t.TempDir()
	contain, vmtest := buildForVM(t, dir)
	initrd := filepath.Join(dir, "initrd.gz")
	unit := testUnit
	if run := os.Getenv("CONTAIN_VM_RUN"); run != "" && !strings.ContainsAny(run, " \"'\\%$") {
		// systemd hands the kernel's command line to no service: the
		// unit says it.
		unit = strings.Replace(unit, "Environment=", "Environment=CONTAIN_VM_RUN="+run+" ", 1)
	}
	if err := packSystemd(initrd, rootfs, unit, contain, vmtest); err != nil {
		t.Fatal(err)
	}
	bootVM(t, qemu, kernel, initrd, 2048, "console=ttyS0 rdinit=/lib/systemd/systemd panic=-1 quiet loglevel=1 systemd.show_status=0")
}

// systemdRootfs is the root file system's tarball, made once per machine.
func systemdRootfs(t *testing.T, mmdebstrap string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cache, "contain", "vm-systemd-bookworm-"+strings.Join(systemdPackages, ",")+".tar")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := strings.TrimSuffix(path, ".tar") + ".new.tar" // mmdebstrap picks the format by the name
	cmd := exec.Command(mmdebstrap, "--variant=minbase", "--include="+strings.Join(systemdPackages, ","), "bookworm", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("mmdebstrap: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// testUnit runs the in-VM tests once the system is up, from a service's
// cgroup, then powers off.
const testUnit = `[Unit]
Description=contain's tests in a VM with systemd
After=basic.target dbus.service systemd-logind.service

[Service]
Type=oneshot
Environment=CONTAIN_IN_VM=1 CONTAIN_VM_SYSTEMD=1
ExecStart=/bin/sh -c 'exec >/dev/console 2>&1; cd /tmp; set -- -test.timeout 200s -test.run "^TestSystemd"; [ -z "$CONTAIN_VM_RUN" ] || set -- -test.timeout 200s -test.run "$CONTAIN_VM_RUN"; /usr/local/bin/vmtest -test.v "$@"; echo "contain-vm: tests exited $?"; systemctl poweroff -ff'

[Install]
WantedBy=multi-user.target
`

// packSystemd writes the initramfs of the systemd VM: the root file system
// from its tarball, then contain, the in-VM tests, the test unit, and the
// user u (uid 1000), lingering, so that its manager runs without a login.
func packSystemd(path, rootfs, unit string, contain, vmtest []byte) error {
	in, err := os.Open(rootfs)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	a := &cpioWriter{w: gz}
	kept := map[string][]byte{"etc/passwd": nil, "etc/group": nil, "etc/shadow": nil}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			continue
		}
		perm := int(h.Mode & 0o7777)
		switch h.Typeflag {
		case tar.TypeDir:
			a.entry(name, cpioDir|perm, h.Uid, h.Gid, 0, 0, nil)
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if _, ok := kept[name]; ok {
				kept[name] = b
			}
			a.entry(name, cpioFile|perm, h.Uid, h.Gid, 0, 0, b)
		case tar.TypeSymlink:
			a.entry(name, cpioSymlink|0o777, h.Uid, h.Gid, 0, 0, []byte(h.Linkname))
		case tar.TypeLink:
			// A hard link becomes a link by name: the same file to read.
			a.entry(name, cpioSymlink|0o777, h.Uid, h.Gid, 0, 0, []byte("/"+strings.TrimPrefix(h.Linkname, "./")))
		case tar.TypeChar:
			a.entry(name, cpioChar|perm, h.Uid, h.Gid, int(h.Devmajor), int(h.Devminor), nil)
		case tar.TypeBlock:
			a.entry(name, cpioBlock|perm, h.Uid, h.Gid, int(h.Devmajor), int(h.Devminor), nil)
		case tar.TypeFifo:
			a.entry(name, cpioFifo|perm, h.Uid, h.Gid, 0, 0, nil)
		}
	}
	for name, b := range kept {
		if b == nil {
			return errors.New(name + " is not in the root file system")
		}
	}
	a.entry("etc/passwd", cpioFile|0o644, 0, 0, 0, 0, append(kept["etc/passwd"], "u:x:1000:1000:u:/home/u:/bin/sh\n"...))
	a.entry("etc/group", cpioFile|0o644, 0, 0, 0, 0, append(kept["etc/group"], "u:x:1000:\n"...))
	a.entry("etc/shadow", cpioFile|0o640, 0, 42, 0, 0, append(kept["etc/shadow"], "u:*:20000:0:99999:7:::\n"...))
	a.entry("home/u", cpioDir|0o755, 1000, 1000, 0, 0, nil)
	a.entry("var/lib/systemd/linger", cpioDir|0o755, 0, 0, 0, 0, nil)
	a.entry("var/lib/systemd/linger/u", cpioFile|0o644, 0, 0, 0, 0, nil)
	a.entry("usr/local/bin/contain", cpioFile|0o755, 0, 0, 0, 0, contain)
	a.entry("usr/local/bin/vmtest", cpioFile|0o755, 0, 0, 0, 0, vmtest)
	a.entry("etc/systemd/system/contain-tests.service", cpioFile|0o644, 0, 0, 0, 0, []byte(unit))
	a.entry("etc/systemd/system/multi-user.target.wants/contain-tests.service", cpioSymlink|0o777, 0, 0, 0, 0, []byte("/etc/systemd/system/contain-tests.service"))
	// The machine ID systemd would otherwise make on each boot.
	a.entry("etc/machine-id", cpioFile|0o444, 0, 0, 0, 0, append(bytes.Repeat([]byte("c"), 32), '\n'))
	a.end()
	if a.err != nil {
		return a.err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}
