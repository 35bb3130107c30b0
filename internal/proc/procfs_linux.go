package proc

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/procfs"
)

// FS is the live /proc tree.
var FS = procfs.FS{Root: "/proc"}

// ReadFile reads a whole /proc or cgroup file into buf.
func ReadFile(path string, buf []byte) ([]byte, error) { return procfs.ReadFile(path, buf) }

// ReadStat reads /proc/PID/stat, using buf.
func ReadStat(pid int, buf []byte) (procfs.Stat, error) { return FS.Stat(pid, buf) }

// SignalPinned sends sig to pid through a pidfd opened first. verify runs
// after the pidfd pins the process; the send succeeding afterwards proves
// the PID was not recycled in between (a process keeps its PID until it is
// reaped).
func SignalPinned(pid int, sig unix.Signal, verify func() error) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := verify(); err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal: %w", err)
	}
	return nil
}
