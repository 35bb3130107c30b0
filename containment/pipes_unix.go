//go:build linux || darwin

package containment

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/run"
)

const supported = true

// specEarly: a Spec up to this long are written before the copy starts
// (an empty pipe holds 16 KiB on macOS, 64 KiB on Linux).
const specEarly = 4096

// passPipes gives the copy the two pipes as its descriptors after the
// command's own (cmd.ExtraFiles, 3 and up, which the copy passes on).
func passPipes(cmd *exec.Cmd, stop, out *os.File) (restore func(), pipes string, err error) {
	extra := cmd.ExtraFiles
	n := 3 + len(extra)
	cmd.ExtraFiles = append(extra[:len(extra):len(extra)], stop, out)
	return func() { cmd.ExtraFiles = extra }, fmt.Sprintf("%d,%d", n, n+1), nil
}

// extraFiles is true: cmd.ExtraFiles reach the command.
const extraFiles = true

// holdExtraFiles keeps, in the copy, the command's descriptors (3 up to
// the first pipe) from what the copy starts before the command: marked
// close-on-exec, the crash guard does not get them. handOn, called just
// before the run, lets the command (and a shim that starts it) inherit
// them at their numbers; drop, once the command runs, closes the copy's
// own, so that the command's end of a pipe is the command's alone.
func holdExtraFiles(v string) (handOn, drop func()) {
	sfd, _, err := pipeFds(v)
	if err != nil || sfd <= 3 {
		return func() {}, func() {}
	}
	for fd := 3; fd < sfd; fd++ {
		syscall.CloseOnExec(fd)
	}
	return func() {
			for fd := 3; fd < sfd; fd++ {
				unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0)
			}
		}, func() {
			for fd := 3; fd < sfd; fd++ {
				unix.Close(fd)
			}
		}
}

// pipeFds reads the descriptors passPipes named.
func pipeFds(v string) (sfd, ofd int, err error) {
	a, b, ok := strings.Cut(v, ",")
	sfd, err1 := strconv.Atoi(a)
	ofd, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || sfd < 3 || ofd < 3 || sfd == ofd {
		return 0, 0, fmt.Errorf("%s=%q names no pipes", pipesVar, v)
	}
	return sfd, ofd, nil
}

// provePipes proves, in the copy, before anything else, that its host
// started it: both descriptors that passPipes gave it are pipes that this
// user or root made (entry.Prove).
func provePipes(v string) error {
	sfd, ofd, err := pipeFds(v)
	if err != nil {
		return err
	}
	return entry.First(entry.Prove(sfd, entry.Pipe), entry.Prove(ofd, entry.Pipe))
}

// takeSpec reads the Spec on the stop pipe, which the host wrote before
// or once the copy started.
func takeSpec(v string) (run.Spec, error) {
	sfd, _, err := pipeFds(v)
	if err != nil {
		return run.Spec{}, err
	}
	// Read as blocking, straight from the descriptor: openPipes makes
	// the one *os.File it will have, for the runtime's poller.
	return decodeSpec(bufio.NewReaderSize(fdReader(sfd), specEarly))
}

// fdReader reads a descriptor with read(2), as it is.
type fdReader int

func (fd fdReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// openPipes opens, in the copy, the pipes passPipes gave it (takeSpec
// has proved them), close-on-exec: neither the command nor the guard
// holds them.
func openPipes(v string) (stop, out *os.File, err error) {
	sfd, ofd, err := pipeFds(v)
	if err != nil {
		return nil, nil, err
	}
	for _, fd := range []int{sfd, ofd} {
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

func requestStop() { syscall.Kill(os.Getpid(), syscall.SIGTERM) }

// copyVars are the program's variables its copy keeps: where contain
// keeps its registries, and the session the program runs in (a nested
// run's tag, contain run -d's claim).
var copyVars = []string{"PATH", "HOME", "TMPDIR", "XDG_RUNTIME_DIR", "RUNNING_PROCESS_ORIGINATOR"}
