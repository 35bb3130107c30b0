package proc

import (
	"github.com/contain-cli/contain/internal/procfs"
)

// FS is the live /proc tree.
var FS = procfs.FS{Root: "/proc"}

// ReadFile reads a whole /proc or cgroup file into buf.
func ReadFile(path string, buf []byte) ([]byte, error) { return procfs.ReadFile(path, buf) }

// ReadStat reads /proc/PID/stat, using buf.
func ReadStat(pid int, buf []byte) (procfs.Stat, error) { return FS.Stat(pid, buf) }
