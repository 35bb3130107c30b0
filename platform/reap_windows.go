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
type handle struct {
	h           windows.Handle
	terminating bool // TerminateProcess succeeded: it is on its way out
}

// reapAccess is what reap needs of a target: to check it (times, memory)
// and to suspend, resume and terminate it.
const reapAccess = readAccess | windows.PROCESS_SUSPEND_RESUME | windows.PROCESS_TERMINATE

// gone turns the failure of a call on a process that has ended, or is
// ending (TerminateProcess then fails with access denied, NtResumeProcess
// with STATUS_PROCESS_IS_TERMINATING), into errGone or success.
func (h *handle) gone(err error) error {
	switch {
	case err == nil:
		return nil
	case h.exited():
		return errGone
	case h.terminating:
		return nil // its end is reported once it has exited
	}
	return err
}

func (h *handle) stop() error   { return h.gone(ntCall(procNtSuspendProcess, h.h)) }
func (h *handle) resume() error { return h.gone(ntCall(procNtResumeProcess, h.h)) }

// signal: Windows cannot send a console event to one process of another
// console, so reap's first signal terminates too (signal 0 sends nothing).
func (h *handle) signal(sig syscall.Signal) error {
	if sig == 0 {
		return nil
	}
	return h.kill()
}

func (h *handle) kill() error {
	if h.exited() {
		return errGone
	}
	err := h.gone(windows.TerminateProcess(h.h, terminateCode))
	if err == nil {
		h.terminating = true
	}
	return err
}

func (h *handle) exited() bool {
	ev, err := windows.WaitForSingleObject(h.h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func (h *handle) close() { windows.CloseHandle(h.h) }

// exitedPins asks each handle whether its process has exited.
func exitedPins(pins []pinned) []bool {
	out := make([]bool, len(pins))
	for i, p := range pins {
		out[i] = p.(*handle).exited()
	}
	return out
}

// firstSignalEnds: the first signal terminates, unless it is 0.
func firstSignalEnds(sig syscall.Signal) bool { return sig != 0 }

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

// targetOS: Windows checks a target by its creation time and tag, which
// the target's outcome already holds.
type targetOS struct{}

// choiceTarget is a tagged process, to be pinned and checked.
func (e *reaper) choiceTarget(c session.Choice) *target {
	return &target{out: Outcome{Process: c.Process, Session: c.Session}}
}

// openPin opens a handle on t's process: the PID then cannot be given to
// another process while reap works on it.
func (e *reaper) openPin(t *target) (pinned, error) {
	h, err := windows.OpenProcess(reapAccess, false, uint32(t.out.PID))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil, errGone
		}
		return nil, &pinFailure{"cannot be pinned", err}
	}
	return &handle{h: h}, nil
}

// check tells, through p, whether t's process is still the one seen.
func (e *reaper) check(t *target, p pinned) error {
	return verifyProcess(p.(*handle).h, session.Choice{Process: t.out.Process, Session: t.out.Session})
}

// ended reports whether t, not pinned now, has exited.
func (e *reaper) ended(t *target) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(t.out.PID))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	start, exited, err := creationTime(h)
	return err == nil && (exited || start != t.out.Start)
}

// waitStopped: NtSuspendProcess has suspended every thread when it returns.
func (e *reaper) waitStopped([]*target) {}

// pinBudget: handles are not counted against a small limit on Windows.
func pinBudget() int { return 1 << 20 }

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
		if (&handle{h: h}).exited() {
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
