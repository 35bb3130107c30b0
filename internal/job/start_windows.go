package job

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

// StartError is cmd.Start's own failure: the command could not be started
// at all (not found, not executable), as opposed to put into the job.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Start starts cmd suspended in a new console process group, puts it
// into j, lets it handle Ctrl-C again, and only then lets it run: no
// instruction of it runs outside the job. It returns a handle of its own
// to the process. log says what did not stop the start.
func (j *Job) Start(cmd *exec.Cmd, log func(format string, a ...any)) (windows.Handle, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP
	if err := cmd.Start(); err != nil {
		return 0, &StartError{Err: err}
	}
	var h windows.Handle
	var err error
	cmd.Process.WithHandle(func(ph uintptr) {
		self := windows.CurrentProcess()
		err = windows.DuplicateHandle(self, windows.Handle(ph), self, &h, 0, false, windows.DUPLICATE_SAME_ACCESS)
	})
	if err == nil {
		if err = windows.AssignProcessToJobObject(j.h, h); err != nil {
			err = fmt.Errorf("cannot put %s into the job object: %w (is contain inside a job that forbids nested jobs?)", cmd.Args[0], err)
		}
	}
	if err == nil {
		if cerr := enableCtrlC(h); cerr != nil {
			log("cannot let the command handle Ctrl-C: %v (it will ignore Ctrl-C, as in a new process group)", cerr)
		}
		if err = proc.Resume(h); err != nil {
			err = fmt.Errorf("cannot resume %s: %w", cmd.Args[0], err)
		}
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		if h != 0 {
			windows.CloseHandle(h)
		}
		return 0, err
	}
	return h, nil
}

// enableCtrlC clears, in a suspended process's parameters, the flag by
// which CREATE_NEW_PROCESS_GROUP makes it (and its children) ignore
// Ctrl-C: the console reads it when the process starts. A new process group
// is what lets contain send CTRL_BREAK to COMMAND alone; with the flag
// cleared, a Ctrl-C typed at the console still reaches COMMAND as it would
// without contain.
func enableCtrlC(h windows.Handle) error {
	params, err := proc.ProcessParameters(h)
	if err != nil {
		return err
	}
	var zero uint32
	var pp windows.RTL_USER_PROCESS_PARAMETERS
	return windows.WriteProcessMemory(h, params+unsafe.Offsetof(pp.ConsoleFlags), (*byte)(unsafe.Pointer(&zero)), 4, nil)
}
