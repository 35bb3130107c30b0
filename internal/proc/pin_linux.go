package proc

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// PidFD pins a process on Linux: until it is closed, the PID names that
// process, alive or a zombie, and no other. The runner's signals and
// reap's go through it alike.
type PidFD int

// OpenPin pins pid. ErrGone: there is no process pid; a PinFailure: it
// could not be pinned.
func OpenPin(pid int) (Pin, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil, ErrGone
	}
	if err != nil {
		return nil, &PinFailure{What: "cannot be pinned", Err: err}
	}
	return PidFD(fd), nil
}

// SignalPinned sends sig to pid through a pin opened first. verify runs
// once the process is pinned; the send succeeding afterwards proves the
// PID was not recycled in between (a process keeps its PID until it is
// reaped).
func SignalPinned(pid int, sig syscall.Signal, verify func() error) error {
	pin, err := OpenPin(pid)
	if err != nil {
		return err
	}
	defer pin.Close()
	if err := verify(); err != nil {
		return err
	}
	return pin.Signal(sig)
}

func (fd PidFD) send(sig syscall.Signal) error {
	err := unix.PidfdSendSignal(int(fd), sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return ErrGone
	}
	return err
}

func (fd PidFD) Stop() error { return fd.send(unix.SIGSTOP) }

func (fd PidFD) Resume() error { return fd.send(unix.SIGCONT) }

func (fd PidFD) Signal(sig syscall.Signal) error { return fd.send(sig) }

func (fd PidFD) Kill() error { return fd.send(unix.SIGKILL) }

func (fd PidFD) Close() { unix.Close(int(fd)) }

// ExitedPins polls every pidfd at once: one readable has exited.
func ExitedPins(pins []Pin) []bool {
	fds := make([]unix.PollFd, len(pins))
	for i, p := range pins {
		fds[i] = unix.PollFd{Fd: int32(p.(PidFD)), Events: unix.POLLIN}
	}
	if len(fds) > 0 {
		for {
			_, err := unix.Poll(fds, 0)
			if err != unix.EINTR {
				break
			}
		}
	}
	out := make([]bool, len(pins))
	for i, fd := range fds {
		out[i] = fd.Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
	}
	return out
}

// Gone: a read of /proc/PID failed because the process is gone.
func Gone(err error) bool {
	return errors.Is(err, ErrGone) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}
