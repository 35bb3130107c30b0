package testtool

import (
	"bytes"
	"os"
	"strconv"
)

// Alive reports whether pid is a process that has not exited, as far as
// this user can see it (/proc/PID/stat): a zombie is dead (the init of
// some machines reaps orphaned zombies late).
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
