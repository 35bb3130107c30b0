package hook

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/job"
	"github.com/contain-cli/contain/internal/proc"
)

// winHook is the hook on Windows: cmd.exe in a kill-on-close job of its
// own, outside COMMAND's, so that terminating that job ends it and all it
// started, and so does contain's end, however it ends.
type winHook struct {
	cmd    *exec.Cmd
	job    *job.Job
	h      windows.Handle
	killed atomic.Bool
}

// Start starts command as cmd /c does, its command line written by
// hand: cmd.exe parses its own, which Go's quoting of arguments would
// spoil (/s: cmd takes what is between the outer quotes as it is).
func Start(command string, env []string) (Process, error) {
	j, err := job.New()
	if err != nil {
		return nil, err
	}
	shell := comSpec()
	cmd := exec.Command(shell)
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: syscall.EscapeArg(shell) + ` /d /s /c "` + command + `"`}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // stdin: the null device
	h, err := j.Start(cmd, func(string, ...any) {})
	if err != nil {
		j.Close()
		return nil, err
	}
	return &winHook{cmd: cmd, job: j, h: h}, nil
}

// comSpec is the command interpreter, as cmd /c and the C library's
// system() find it.
func comSpec() string {
	if s := os.Getenv("ComSpec"); s != "" {
		return s
	}
	if dir, err := windows.GetSystemDirectory(); err == nil {
		return filepath.Join(dir, "cmd.exe")
	}
	return "cmd.exe"
}

func (w *winHook) Wait() string {
	err := w.cmd.Wait()
	if w.cmd.ProcessState == nil {
		return fmt.Sprintf("ended, status unknown (%v)", err)
	}
	code := uint32(w.cmd.ProcessState.ExitCode())
	if w.killed.Load() && code == proc.TerminateCode {
		return "terminated with its job"
	}
	return fmt.Sprintf("exited %d", code)
}

func (w *winHook) Kill() error {
	w.killed.Store(true)
	err := w.job.Terminate()
	w.job.Close()
	windows.CloseHandle(w.h)
	return err
}
