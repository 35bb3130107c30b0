package marker

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Place opens a pipe and puts its write end at FD in this process, not
// close-on-exec, so that the next child forked inherits it there. It
// returns the pipe's identity (its inode) and release, which closes this
// process's ends; keep (true) keeps FD open, so that the identity can be
// read from this process while it lives (the shim). Place refuses, and
// changes nothing, where FD is in use or above the limit of open files.
func Place() (ino uint64, release func(keep bool), err error) {
	w, ino, err := New()
	if err != nil {
		return 0, nil, err
	}
	defer unix.Close(w)
	if err := unix.Dup3(w, FD, 0); err != nil {
		return 0, nil, err
	}
	return ino, func(keep bool) {
		if !keep {
			unix.Close(FD)
			return
		}
		unix.CloseOnExec(FD)
	}, nil
}

// New makes a marker: a pipe whose write end w (close-on-exec) is what a
// child gets at FD (a spawner's move), its read end closed at once; ino
// is its identity. The caller closes w once the child has it.
//
// It refuses where this process has FD open (inherited: a descriptor the
// caller handed down at that number stays the child's).
func New() (w int, ino uint64, err error) {
	if !Fits() {
		return -1, 0, errors.New("marker: the limit of open files leaves no descriptor " + strconv.Itoa(FD))
	}
	if inUse(FD) {
		return -1, 0, errors.New("marker: descriptor " + strconv.Itoa(FD) + " is in use")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, 0, err
	}
	unix.Close(p[0])
	var st unix.Stat_t
	if err := unix.Fstat(p[1], &st); err != nil {
		unix.Close(p[1])
		return -1, 0, err
	}
	return p[1], st.Ino, nil
}

// Of reads the identity of the marker process pid holds at FD (0: none,
// or not a pipe).
func Of(pid int) uint64 {
	l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(FD))
	if err != nil {
		return 0
	}
	return pipeInode(l)
}

// pipeInode reads a descriptor's link, "pipe:[INODE]" (0: not a pipe).
func pipeInode(link string) uint64 {
	s, ok := strings.CutPrefix(link, "pipe:[")
	if !ok || !strings.HasSuffix(s, "]") {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Pipes are the identities of the pipes process pid holds, each
// descriptor read once (reap matches them against every session's
// marker); readable is false where its descriptors cannot be read
// (another user's, an undumpable process, hidepid).
func Pipes(pid int) (pipes []uint64, readable bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	for _, n := range names {
		if l, err := os.Readlink(dir + n); err == nil {
			if ino := pipeInode(l); ino != 0 {
				pipes = append(pipes, ino)
			}
		}
	}
	return pipes, true
}
