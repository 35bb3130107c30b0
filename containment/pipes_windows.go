package containment

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

const supported = true

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

// openPipes opens, in the copy, the handles passPipes gave it, no longer
// inheritable: neither the command nor the guard holds them.
func openPipes(v string) (stop, out *os.File, err error) {
	a, b, ok := strings.Cut(v, ",")
	sh, err1 := strconv.ParseUint(a, 10, 64)
	oh, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || sh == oh {
		return nil, nil, fmt.Errorf("%s=%q", pipesVar, v)
	}
	for _, h := range []uint64{sh, oh} {
		if t, err := windows.GetFileType(windows.Handle(h)); err != nil || t != windows.FILE_TYPE_PIPE {
			return nil, nil, fmt.Errorf("handle %d is no pipe", h)
		}
		windows.SetHandleInformation(windows.Handle(h), windows.HANDLE_FLAG_INHERIT, 0)
	}
	return os.NewFile(uintptr(sh), "stop"), os.NewFile(uintptr(oh), "out"), nil
}

// requestStop tells this contain run to stop, as contain stop does: its
// stop event, once the run has made it.
func requestStop() {
	name, _ := windows.UTF16PtrFromString(proc.StopEventName(os.Getpid()))
	for {
		if h, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, name); err == nil {
			windows.SetEvent(h)
			windows.CloseHandle(h)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
