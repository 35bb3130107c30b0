package proc

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// Handle pins a process on Windows: while it is open the PID cannot be
// given to another process, and everything is done through it.
type Handle struct {
	H           windows.Handle
	terminating bool // TerminateProcess succeeded: it is on its way out
}

// gone turns the failure of a call on a process that has ended, or is
// ending (TerminateProcess then fails with access denied, NtResumeProcess
// with STATUS_PROCESS_IS_TERMINATING), into errGone or success.
func (h *Handle) gone(err error) error {
	switch {
	case err == nil:
		return nil
	case h.Exited():
		return ErrGone
	case h.terminating:
		return nil // its end is reported once it has exited
	}
	return err
}

func (h *Handle) Stop() error { return h.gone(ntCall(procNtSuspendProcess, h.H)) }

func (h *Handle) Resume() error { return h.gone(ntCall(procNtResumeProcess, h.H)) }

// Signal: Windows cannot send a console event to one process of another
// console, so reap's first signal terminates too (signal 0 sends nothing).
func (h *Handle) Signal(sig syscall.Signal) error {
	if sig == 0 {
		return nil
	}
	return h.Kill()
}

func (h *Handle) Kill() error {
	if h.Exited() {
		return ErrGone
	}
	err := h.gone(windows.TerminateProcess(h.H, TerminateCode))
	if err == nil {
		h.terminating = true
	}
	return err
}

func (h *Handle) Exited() bool {
	ev, err := windows.WaitForSingleObject(h.H, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func (h *Handle) Close() { windows.CloseHandle(h.H) }

// ExitedPins asks each handle whether its process has exited.
func ExitedPins(pins []Pin) []bool {
	out := make([]bool, len(pins))
	for i, p := range pins {
		out[i] = p.(*Handle).Exited()
	}
	return out
}
