//go:build linux || darwin

package run

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

// startHook starts the --on-timeout command with /bin/sh -c, in a process
// group of its own: contain's child, outside COMMAND's process group,
// cgroup and session tag. It is started from a thread other than the
// reaper's, which waits with __WNOTHREAD and so leaves it to the hook's
// own Wait.
func startHook(command string, env []string) (hookProcess, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &unixHook{cmd: cmd, start: proc.StartOf(cmd.Process.Pid)}, nil
}

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
