package testtool

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether pid is a process that has not exited: kill(pid, 0)
// finds it and ps does not show it as a zombie.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}
