package containment

import (
	"fmt"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/reap"
	"github.com/contain-cli/contain/internal/registry"
	"github.com/contain-cli/contain/session"
)

// ReapOptions choose what Reap ends, as contain reap's options do.
type ReapOptions struct {
	// Sessions (TOOL:PID) and Tools narrow the orphaned sessions reaped;
	// none: every orphaned session of every tool on the machine.
	Sessions []string
	Tools    []string
	// IncludeDaemons ends processes marked RUNNING_PROCESS_IS_DAEMON=1 too.
	IncludeDaemons bool
	// Signal is the first signal (0: SIGTERM); Grace the time before
	// SIGKILL (0: 2 s).
	Signal syscall.Signal
	Grace  time.Duration
	// DryRun says what would be done, and does nothing.
	DryRun bool
}

// Reaped is what became of one process.
type Reaped struct {
	PID     int
	Session string // the tag it carries, or "cgroup DIR" where reap found it in a dead run's cgroup
	Comm    string
	Argv    []string
	// Result: "ended after the first signal", "killed with SIGKILL",
	// "left alone: ..." (the safety rules), "would send ..." (DryRun).
	Result  string
	Skipped bool // left alone by the safety rules
	Failed  bool // reap tried to end it and could not
}

// ReapResult is what Reap did: every process of the sessions chosen, and
// the leftover cgroups of dead runs, each with what became of it.
type ReapResult struct {
	Processes []Reaped
	Cgroups   []ReapedCgroup
	// Hidden says why other users' processes may be missing: /proc is
	// mounted hidepid ("" when it shows every process). A session whose
	// originator it hides is alive to Reap, never orphaned.
	Hidden string
}

// ReapedCgroup is what became of a leftover cgroup of a dead run.
type ReapedCgroup struct {
	Dir    string
	Result string // "removed", "left alone: ...", "would ..." (DryRun)
	Failed bool
}

// Reap ends the processes of orphaned sessions, as contain reap does: the
// first signal, SIGKILL after the grace period, through pins (a pidfd on
// Linux, a process handle on Windows, a re-check on macOS) and never to a
// live session's process, a recycled PID, a daemon (unless asked) or
// another user's process; and removes the leftover cgroups of dead
// contain runs. Without Sessions or Tools it reaps every orphan on the
// machine: name what is yours.
func Reap(o ReapOptions) (ReapResult, error) {
	if o.Signal == 0 {
		o.Signal = syscall.SIGTERM
	}
	if o.Grace == 0 {
		o.Grace = 2 * time.Second
	}
	sv, err := reap.Look(session.Options{Filter: session.Filter{Values: o.Sessions, Tools: o.Tools}, IncludeDaemons: o.IncludeDaemons})
	if err != nil {
		return ReapResult{}, fmt.Errorf("cannot list processes: %w", err)
	}
	res := ReapResult{Hidden: sv.Hidden}
	add := func(out reap.Outcome, skipped bool) {
		res.Processes = append(res.Processes, Reaped{PID: out.PID, Session: out.Where(), Comm: out.Comm, Argv: out.Argv,
			Result: out.Result(), Skipped: skipped, Failed: out.Alive && !skipped && !o.DryRun})
	}
	alone := sv.LeftAlone()
	for _, out := range alone.Processes {
		add(out, true)
	}
	for _, c := range alone.Cgroups {
		res.Cgroups = append(res.Cgroups, ReapedCgroup(c))
	}
	if o.DryRun {
		dry, _ := sv.DryRun(reap.Plan{Signal: o.Signal, Grace: o.Grace})
		for _, out := range dry.Processes {
			add(out, false)
		}
		for _, c := range dry.Cgroups {
			res.Cgroups = append(res.Cgroups, ReapedCgroup(c))
		}
		return res, sv.CgroupErr
	}
	r := sv.Reap(reap.Plan{Signal: o.Signal, Grace: o.Grace})
	for _, out := range r.Processes {
		add(out, false)
	}
	for _, c := range r.Cgroups {
		res.Cgroups = append(res.Cgroups, ReapedCgroup(c))
	}
	registry.PruneRegistries()
	return res, sv.CgroupErr
}
