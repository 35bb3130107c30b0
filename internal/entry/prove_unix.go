//go:build linux || darwin

package entry

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Kinds of descriptor a hidden entry is handed.
const (
	Pipe   = unix.S_IFIFO
	File   = unix.S_IFREG // a memfd contain wrote, or a shell's here-document
	Anyhow = 0            // Pipe or File
)

// Prove checks that fd is open, is a descriptor of kind (Pipe, File, or
// Anyhow for either), and was made by this user or by root: the kernel
// records the effective user that made a pipe, a memfd or a file as its
// owner, so another user cannot make one that passes, nor hand one to a
// program of this user's that it runs through a privileged intermediary.
// A hidden entry proves every descriptor it acts on before it does
// anything else.
//
// On macOS, fstat(2) gives a pipe the caller's ids, not its maker's:
// there the owner of a pipe proves nothing, and the entry rests on its
// orders arriving on the descriptor and on the refusal of AT_SECURE.
func Prove(fd int, kind uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &badFd{fd, "is not open (" + err.Error() + ")"}
	}
	t := uint32(st.Mode) & unix.S_IFMT
	switch {
	case kind == Anyhow && (t == Pipe || t == File):
	case kind != Anyhow && t == kind:
	default:
		return &badFd{fd, "is not a " + kindName(kind)}
	}
	if uid := int(st.Uid); uid != unix.Geteuid() && uid != 0 {
		return &badFd{fd, "was made by uid " + strconv.Itoa(uid) + ", not by this user (uid " + strconv.Itoa(unix.Geteuid()) + ") or root"}
	}
	return nil
}

func kindName(kind uint32) string {
	switch kind {
	case Pipe:
		return "pipe"
	case File:
		return "file"
	}
	return "pipe or file"
}
