//go:build linux || darwin

package testtool

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HoldMachine waits until no other test package holds the machine, and
// holds it until the returned function is called (or the process ends):
// for the packages whose load would disturb the other's measurements
// when go test runs them side by side (the end-to-end tests, which time
// CPU shares and races; the VM tests, whose QEMU takes every core). With
// no lock file to be had, it holds nothing and says so through why.
func HoldMachine() (release func(), why error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "contain-tests-machine.lock"), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return func() {}, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return func() {}, err
	}
	return func() { f.Close() }, nil
}
