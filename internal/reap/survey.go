package reap

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// Survey is what contain reap finds before it acts: every session seen,
// what the selected ones hold, and the leftover cgroups of dead runs.
type Survey struct {
	Sessions []session.Session
	// Chosen are the processes of the sessions selected; Skip says why
	// one is left alone.
	Chosen  []session.Choice
	Skipped []session.SkippedSession // sessions left alone whole
	// Cgroups are the leftover groups of dead contain runs taken; Skip
	// says why one is left alone. CgroupErr: why they could not all be
	// looked for.
	Cgroups   []cgroup.Leftover
	CgroupErr error
	// Unreadable counts the processes whose environment could not be
	// read, by reason; RegistryErr says why some registries could not be.
	Unreadable  map[string]int
	RegistryErr error
	// Hidden says why other users' processes may be missing (proc.Hidden:
	// /proc mounted hidepid); "" when they are not.
	Hidden string

	opts session.Options
	me   session.Reaper
}

// Look lists the tagged processes and the registries of contain's ended
// sessions (ListForReap), selects the sessions o asks for, as Me may act on
// them, and finds the leftover cgroups.
func Look(o session.Options) (*Survey, error) {
	l, err := ListForReap()
	if err != nil {
		return nil, err
	}
	s := &Survey{Sessions: session.Group(l.Procs, l.Lookup), Unreadable: l.Unreadable, RegistryErr: l.Registry,
		Hidden: proc.Hidden(), opts: o, me: Me()}
	s.Chosen, s.Skipped = session.Select(s.Sessions, o, s.me)
	s.Cgroups, s.CgroupErr = LeftoverCgroups(o.Filter, s.Chosen)
	return s, nil
}

// Targets are the processes chosen that are not left alone.
func (s *Survey) Targets() []session.Choice {
	var out []session.Choice
	for _, ch := range s.Chosen {
		if ch.Skip == "" {
			out = append(out, ch)
		}
	}
	return out
}

// Plan is the leftover cgroups taken that are not left alone.
func (s *Survey) Plan() []cgroup.Leftover {
	var out []cgroup.Leftover
	for _, lc := range s.Cgroups {
		if lc.Skip == "" {
			out = append(out, lc)
		}
	}
	return out
}

// LeftAlone is what reap leaves alone, and why: the processes chosen
// that it may not touch (Skip), still running, and the cgroups likewise.
func (s *Survey) LeftAlone() Report {
	var r Report
	for _, ch := range s.Chosen {
		if ch.Skip != "" {
			r.Processes = append(r.Processes, Outcome{Process: ch.Process, Session: ch.Session, Ending: LeftAlone, Detail: ch.Skip, Alive: true})
		}
	}
	for _, lc := range s.Cgroups {
		if lc.Skip != "" {
			r.Cgroups = append(r.Cgroups, CgroupOutcome{Dir: lc.Dir, Result: "left alone: " + lc.Skip})
		}
	}
	return r
}

// DryRun is what Reap would do with p's signal and grace period, touching
// nothing: each target Planned (still running), each cgroup what would be
// done to it. InCgroup names the cgroup each target is in, as the real
// run finds it there.
func (s *Survey) DryRun(p Plan) (r Report, inCgroup map[proc.ID]string) {
	what := "would send " + signals.Name(p.Signal)
	if p.Signal != syscall.SIGKILL {
		what += ", then SIGKILL after " + p.Grace.String()
	}
	inCgroup = map[proc.ID]string{}
	targets := s.Targets()
	for _, t := range targets {
		r.Processes = append(r.Processes, Outcome{Process: t.Process, Session: t.Session, Ending: Planned, Detail: what, Alive: true})
	}
	for _, lc := range s.Plan() {
		result := fmt.Sprintf("would freeze, kill and remove (%s)", text.Plural(len(lc.Procs), "process", "processes"))
		if len(lc.Procs) == 0 {
			result = "would remove (it is empty)"
		}
		if cgroup.IsScope(lc.Dir) {
			// Its directory is systemd's (removeGroups).
			result = fmt.Sprintf("would freeze and kill (%s); systemd stops the emptied scope", text.Plural(len(lc.Procs), "process", "processes"))
			if len(lc.Procs) == 0 {
				result = "would empty it of groups; systemd stops the scope"
			}
		}
		r.Cgroups = append(r.Cgroups, CgroupOutcome{Dir: lc.Dir, Result: result})
		for _, t := range targets {
			if slices.Contains(lc.Procs, t.PID) {
				inCgroup[proc.ID{PID: t.PID, Start: t.Start}] = lc.Dir
			}
		}
	}
	return r, inCgroup
}

// Reap ends the targets and the leftover cgroups (Reap), looking again
// at the targets' sessions until no new process appears.
func (s *Survey) Reap(p Plan) Report {
	targets := s.Targets()
	var values []string
	for _, t := range targets {
		if !slices.Contains(values, t.Session) {
			values = append(values, t.Session)
		}
	}
	p.Targets, p.Cgroups = targets, s.Plan()
	p.Rescan = func() ([]session.Choice, error) {
		if len(values) == 0 {
			return nil, nil
		}
		o := s.opts
		o.Filter = session.Filter{Values: values}
		return Choose(o, s.me)
	}
	return Reap(p)
}

// LeftoverCgroups finds the cgroups of dead contain runs. With a filter,
// only those holding a chosen process are taken, and, for a session
// TOOL:PID, the empty one contain run PID left (killed before its guard
// could remove it). An empty group names no tool: a tool alone does not
// take it.
func LeftoverCgroups(f session.Filter, chosen []session.Choice) ([]cgroup.Leftover, error) {
	all, err := cgroup.FindLeftovers()
	if len(f.Tools) == 0 && len(f.Values) == 0 {
		return all, err
	}
	var pids []int
	for _, v := range f.Values {
		if _, pid, err := tag.Parse(v); err == nil {
			pids = append(pids, pid)
		}
	}
	var out []cgroup.Leftover
	for _, lc := range all {
		mine := slices.ContainsFunc(chosen, func(c session.Choice) bool { return c.Skip == "" && slices.Contains(lc.Procs, c.PID) })
		if mine || len(lc.Procs) == 0 && slices.Contains(pids, lc.PID) {
			out = append(out, lc)
		}
	}
	return out, err
}
