package reap

import (
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/session"
)

// envOf reads what pid's environment says of sessions: nothing when it
// cannot be read (gone, undumpable, another user's) or was written over.
func envOf(pid int) envRead {
	env, err := proc.FS.Environ(pid, nil)
	if err != nil {
		return envRead{}
	}
	return envFrom(env)
}

// describeEntry is what ps shows of a process a scan found; false when it
// is gone.
func describeEntry(e proc.Entry) (session.Process, bool) {
	st, err := proc.ReadStat(e.PID, nil)
	if err != nil || st.Start != e.Start || st.Zombie() {
		return session.Process{}, false
	}
	return describe(st), true
}

// registeredTarget is a process found through a registry: pinned, and
// checked through its pin (its start time, and that it took no other
// session's tag); its environment is not asked to show the tag.
func (e *reaper) registeredTarget(c session.Choice) *target {
	t := newTarget(c.Process, c.Session, func(st procfs.Stat) error {
		return registeredCheck(envOf(st.PID), c.Session)
	})
	t.out.Found = FoundInRegistry
	if cg := e.cgroupHolding(c.PID); cg != nil {
		t.frozen = cg.frozen
	}
	return t
}
