package containment

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/run"
)

const supported = true

// specEarly: the Spec is written once the copy runs (a pipe's
// buffer is only advisory on Windows).
const specEarly = 0

// passPipes gives the copy the two pipes' handles, inherited.
func passPipes(cmd *exec.Cmd, stop, out *os.File) (restore func(), pipes string, err error) {
	hs := []syscall.Handle{syscall.Handle(stop.Fd()), syscall.Handle(out.Fd())}
	for _, h := range hs {
		if err := windows.SetHandleInformation(windows.Handle(h), windows.HANDLE_FLAG_INHERIT, windows.HANDLE_FLAG_INHERIT); err != nil {
			return nil, "", fmt.Errorf("containment: %w", err)
		}
	}
	old := cmd.SysProcAttr
	attr := &syscall.SysProcAttr{}
	if old != nil {
		*attr = *old
	}
	attr.AdditionalInheritedHandles = append(attr.AdditionalInheritedHandles[:len(attr.AdditionalInheritedHandles):len(attr.AdditionalInheritedHandles)], hs...)
	cmd.SysProcAttr = attr
	return func() { cmd.SysProcAttr = old }, fmt.Sprintf("%d,%d", hs[0], hs[1]), nil
}

// extraFiles is false: Windows has no such thing (os/exec refuses them).
const extraFiles = false

func holdExtraFiles(string) (func(), func()) { return func() {}, func() {} }

// pipeHandles reads the handles passPipes named, which must be pipes.
func pipeHandles(v string) (sh, oh windows.Handle, err error) {
	a, b, ok := strings.Cut(v, ",")
	s, err1 := strconv.ParseUint(a, 10, 64)
	o, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || s == o {
		return 0, 0, fmt.Errorf("%s=%q names no pipes", pipesVar, v)
	}
	for _, h := range []uint64{s, o} {
		if t, err := windows.GetFileType(windows.Handle(h)); err != nil || t != windows.FILE_TYPE_PIPE {
			return 0, 0, fmt.Errorf("handle %d is no pipe", h)
		}
	}
	return windows.Handle(s), windows.Handle(o), nil
}

// provePipes checks, in the copy, that its two handles are pipes. Windows
// has no set-user-ID programs: a handle was inherited from the process
// that started the copy.
func provePipes(v string) error {
	_, _, err := pipeHandles(v)
	return err
}

// takeSpec reads, in the copy, its Spec from the stop pipe.
func takeSpec(v string) (run.Spec, error) {
	sh, _, err := pipeHandles(v)
	if err != nil {
		return run.Spec{}, err
	}
	return decodeSpec(handleReader(sh))
}

// handleReader reads a pipe's handle with ReadFile.
type handleReader windows.Handle

func (h handleReader) Read(b []byte) (int, error) {
	var n uint32
	err := windows.ReadFile(windows.Handle(h), b, &n, nil)
	if err == windows.ERROR_BROKEN_PIPE || (err == nil && n == 0 && len(b) > 0) {
		return 0, io.EOF
	}
	return int(n), err
}

// openPipes opens, in the copy, the handles passPipes gave it, no longer
// inheritable: neither the command nor the guard holds them.
func openPipes(v string) (stop, out *os.File, err error) {
	sh, oh, err := pipeHandles(v)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range []windows.Handle{sh, oh} {
		windows.SetHandleInformation(h, windows.HANDLE_FLAG_INHERIT, 0)
	}
	return os.NewFile(uintptr(sh), "stop"), os.NewFile(uintptr(oh), "out"), nil
}

// copyVars are the program's variables its copy keeps: what Windows
// itself needs (SystemRoot above all), where contain writes, and the
// session the program runs in.
var copyVars = []string{"SystemRoot", "SystemDrive", "windir", "PATH", "PATHEXT", "TEMP", "TMP", "USERPROFILE",
	"LOCALAPPDATA", "ComSpec", "RUNNING_PROCESS_ORIGINATOR"}
