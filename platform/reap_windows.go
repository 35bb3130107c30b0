package platform

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// reaperOS: Windows has no leftover groups to reap (a job dies with its
// last handle).
type reaperOS struct{}

func (e *reaper) prepare()                      {}
func (e *reaper) addUntagged() bool             { return false }
func (e *reaper) resumeGroups()                 {}
func (e *reaper) killGroups()                   {}
func (e *reaper) removeGroups() []CgroupOutcome { return nil }

// handle pins a process on Windows: while it is open the PID cannot be
// given to another process, and everything is done through it.
type handle windows.Handle

// reapAccess is what reap needs of a target: to check it (times, memory)
// and to suspend, resume and terminate it.
const reapAccess = readAccess | windows.PROCESS_SUSPEND_RESUME | windows.PROCESS_TERMINATE

// gone turns a call on an ended process into errGone.
func (h handle) gone(err error) error {
	if err != nil && h.exited() {
		return errGone
	}
	return err
}

func (h handle) stop() error   { return h.gone(ntCall(procNtSuspendProcess, windows.Handle(h))) }
func (h handle) resume() error { return h.gone(ntCall(procNtResumeProcess, windows.Handle(h))) }

// signal: Windows cannot send a console event to one process of another
// console, so reap's first signal terminates too (signal 0 sends nothing).
func (h handle) signal(sig syscall.Signal) error {
	if sig == 0 {
		return nil
	}
	return h.kill()
}

func (h handle) kill() error {
	if h.exited() {
		return errGone
	}
	return h.gone(windows.TerminateProcess(windows.Handle(h), terminateCode))
}

func (h handle) exited() bool {
	ev, err := windows.WaitForSingleObject(windows.Handle(h), 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func (h handle) close() { windows.CloseHandle(windows.Handle(h)) }

// opName names what each step does on Windows.
func opName(o op, sig syscall.Signal) string {
	switch o {
	case opStop:
		return "NtSuspendProcess"
	case opResume:
		return "NtResumeProcess"
	case opSignal:
		if sig == 0 {
			return "nothing (signal 0)"
		}
	}
	return "TerminateProcess"
}

// pinChoice opens the process once, and through that handle checks that
// it is still the one seen (its creation time), still running, and still
// carries the session's tag.
func (e *reaper) pinChoice(c session.Choice) *target {
	t := &target{out: Outcome{Process: c.Process, Session: c.Session}}
	h, err := windows.OpenProcess(reapAccess, false, uint32(c.PID))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return t.pinned(nil, errGone)
		}
		return t.pinned(nil, &pinFailure{"cannot be pinned", err})
	}
	return t.pinned(handle(h), verifyProcess(h, c))
}

// verifyProcess checks, through h, that c's process is the one seen.
func verifyProcess(h windows.Handle, c session.Choice) error {
	start, exited, err := creationTime(h)
	switch {
	case err != nil:
		return &pinFailure{"cannot be checked", err}
	case start != c.Start:
		return errIdentity
	case exited:
		return errGone
	}
	env, _, err := readEnvironment(h)
	if err != nil {
		if handle(h).exited() {
			return errGone
		}
		return fmt.Errorf("its environment cannot be read again: %v", err)
	}
	got, ok := tag.Lookup(env, tag.Var)
	if !ok {
		return fmt.Errorf("it no longer carries %s", tag.Var)
	}
	if got != c.Session {
		return fmt.Errorf("its tag changed to %q", got)
	}
	return nil
}

// FindLeftoverCgroups: Windows has no cgroups.
func FindLeftoverCgroups() ([]LeftoverCgroup, error) { return nil, nil }
