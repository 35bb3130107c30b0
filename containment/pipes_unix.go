//go:build linux || darwin

package containment

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

const supported = true

// passPipes gives the copy the two pipes as its descriptors 3 and 4.
func passPipes(cmd *exec.Cmd, stop, out *os.File) (restore func(), pipes string, err error) {
	cmd.ExtraFiles = []*os.File{stop, out}
	return func() { cmd.ExtraFiles = nil }, "3,4", nil
}

// openPipes opens, in the copy, the pipes passPipes gave it, close-on-exec:
// neither the command nor the guard holds them.
func openPipes(v string) (stop, out *os.File, err error) {
	a, b, ok := strings.Cut(v, ",")
	sfd, err1 := strconv.Atoi(a)
	ofd, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || sfd < 3 || ofd < 3 || sfd == ofd {
		return nil, nil, fmt.Errorf("%s=%q", pipesVar, v)
	}
	for _, fd := range []int{sfd, ofd} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return nil, nil, fmt.Errorf("descriptor %d is no pipe", fd)
		}
		syscall.CloseOnExec(fd)
	}
	// The stop pipe is read until its end for the whole run: non-blocking,
	// it waits in the runtime's poller, not in a thread of its own
	// (os/exec made the program's end blocking when it passed it). The
	// copy alone holds this end.
	if err := syscall.SetNonblock(sfd, true); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(sfd), "stop"), os.NewFile(uintptr(ofd), "out"), nil
}

// requestStop tells this contain run to stop, as contain stop does.
func requestStop() { syscall.Kill(os.Getpid(), syscall.SIGTERM) }
