//go:build linux || darwin

package hook

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
)

// Start starts the --on-timeout command with /bin/sh -c, in a process
// group of its own: contain's child, outside COMMAND's process group,
// cgroup and session tag. It is started from a thread other than the
// reaper's, which waits with __WNOTHREAD and so leaves it to the hook's
// own Wait.
//
// The shell waits at a gate until started (the hook's PID and start
// time) has returned: contain tells its crash guard of the hook there,
// and a contain killed before that leaves a shell that exits at the gate
// having started nothing, rather than a hook the guard does not know.
func Start(command string, env []string, started func(pid int, start uint64)) (Process, error) {
	gate, open, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer open.Close()
	cmd := exec.Command("/bin/sh", "-c", hookGate, "/bin/sh", command)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{gate} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	gate.Close()
	if err != nil {
		return nil, err
	}
	h := &unixHook{cmd: cmd, start: proc.StartOf(cmd.Process.Pid)}
	if started != nil {
		started(cmd.Process.Pid, h.start)
	}
	open.Write([]byte("go\n"))
	return h, nil
}

// hookGate reads the line that opens the gate on fd 3, and at EOF (contain
// died first) exits; then it becomes the hook, in the same process.
const hookGate = `IFS= read -r _ <&3 || exit 0
exec 3<&- /bin/sh -c "$1"`

// unixHook is a running hook and its process group.
type unixHook struct {
	cmd   *exec.Cmd
	start uint64 // the hook's start: its group's members started no earlier
}

func (h *unixHook) Wait() string {
	err := h.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + signals.Name(ws.Signal())
		}
		return fmt.Sprintf("exited %d", ee.ExitCode())
	}
	return fmt.Sprintf("ended (%v)", err)
}

// Kill sends SIGKILL to what is left of the hook's process group, each
// process checked to be the one seen (PID and start time), so that a
// group ID handed out again is never hit.
func (h *unixHook) Kill() error {
	pgid := h.cmd.Process.Pid
	procs, err := proc.Scan()
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range procs {
		if p.Pgrp != pgid || p.Zombie || (p.PID != pgid && p.Start < h.start) {
			continue
		}
		if p.PID == pgid && p.Start != h.start {
			continue
		}
		if err := proc.SignalMember(p.PID, p.Start, unix.SIGKILL, nil); err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, proc.ErrGone) {
			errs = append(errs, fmt.Errorf("%d: %w", p.PID, err))
		}
	}
	return errors.Join(errs...)
}
