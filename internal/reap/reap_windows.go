package reap

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
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

// reapAccess is what reap needs of a target: to check it (times, memory)
// and to suspend, resume and terminate it.
const reapAccess = proc.ReadAccess | windows.PROCESS_SUSPEND_RESUME | windows.PROCESS_TERMINATE

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
	return killName
}

// killName names the end reap gives a process.
const killName = "TerminateProcess"

// targetOS: Windows checks a target by its creation time and tag, which
// the target's outcome already holds.
type targetOS struct{}

// choiceTarget is a tagged process, to be pinned and checked.
func (e *reaper) choiceTarget(c session.Choice) *target {
	return &target{out: Outcome{Process: c.Process, Session: c.Session}}
}

// openPin opens a handle on t's process: the PID then cannot be given to
// another process while reap works on it.
func (e *reaper) openPin(t *target) (proc.Pin, error) {
	h, err := windows.OpenProcess(reapAccess, false, uint32(t.out.PID))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil, proc.ErrGone
		}
		return nil, &proc.PinFailure{What: "cannot be pinned", Err: err}
	}
	return &proc.Handle{H: h}, nil
}

// check tells, through p, whether t's process is still the one seen.
func (e *reaper) check(t *target, p proc.Pin) error {
	return verifyProcess(p.(*proc.Handle).H, session.Choice{Process: t.out.Process, Session: t.out.Session})
}

// ended reports whether t, not pinned now, has exited.
func (e *reaper) ended(t *target) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(t.out.PID))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	start, exited, err := proc.CreationTime(h)
	return err == nil && (exited || start != t.out.Start)
}

// waitStopped: NtSuspendProcess has suspended every thread when it returns.
func (e *reaper) waitStopped([]*target) {}

// pinBudget: handles are not counted against a small limit on Windows.
func pinBudget() int { return 1 << 20 }

// verifyProcess checks, through h, that c's process is the one seen.
func verifyProcess(h windows.Handle, c session.Choice) error {
	start, exited, err := proc.CreationTime(h)
	switch {
	case err != nil:
		return &proc.PinFailure{What: "cannot be checked", Err: err}
	case start != c.Start:
		return proc.ErrIdentity
	case exited:
		return proc.ErrGone
	}
	env, _, err := proc.ReadEnvironment(h)
	if err != nil {
		if (&proc.Handle{H: h}).Exited() {
			return proc.ErrGone
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
