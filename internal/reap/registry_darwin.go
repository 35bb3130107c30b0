package reap

import (
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/proc/procargs"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// envOf reads what pid's environment says of sessions (kern.procargs2):
// nothing when it cannot be read, is hidden, or was written over.
func envOf(pid int) envRead {
	raw, err := proc.Darwin.Args(pid)
	if err != nil {
		return envRead{}
	}
	a, err := procargs.Parse(raw)
	if err != nil || a.EnvHidden {
		return envRead{}
	}
	if len(a.Env) == 0 {
		return envRead{readable: true}
	}
	r := envFrom(joinEnv(a.Env))
	if r.readable {
		// procargs stops at the first empty string: read as macOS has it.
		r.value, r.tagged = procargs.Getenv(a.Env, tag.Var)
		d, _ := procargs.Getenv(a.Env, tag.DaemonVar)
		r.daemon = d == "1"
	}
	return r
}

// describeEntry is what ps shows of a process a scan found; false when it
// is gone.
func describeEntry(e proc.Entry) (session.Process, bool) {
	p, found, err := proc.Darwin.Lookup(e.PID)
	if err != nil || !found || p.Start != e.Start || p.Zombie() {
		return session.Process{}, false
	}
	q := session.Process{PID: p.PID, PPID: p.PPID, Start: p.Start, Started: time.UnixMicro(int64(p.Start)), UID: p.RUID, User: proc.Darwin.User(p.RUID), Comm: p.Comm}
	if a, _ := proc.Darwin.ReadArgs(p); a != nil {
		q.Argv = a.Argv
	}
	return q, true
}

// registeredTarget is a process found through a registry: read again
// before each kill(2) (its start time, and that it took no other
// session's tag); its environment is not asked to show the tag.
func (e *reaper) registeredTarget(c session.Choice) *target {
	return &target{out: Outcome{Process: c.Process, Session: c.Session, Found: FoundInRegistry}, targetOS: targetOS{verify: func(now proc.MacProc) error {
		return registeredCheck(envOf(now.PID), c.Session)
	}}}
}
