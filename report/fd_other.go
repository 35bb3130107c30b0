//go:build !linux

package report

// fdPath: on macOS /dev/stdout, /dev/stderr and /dev/fd/N are character
// devices (fdesc) whose opening duplicates the descriptor; they are
// written as devices. Windows has no such paths.
func fdPath(string) (int, bool) { return 0, false }
