// Package account puts a run's report together, in one place for every
// writer: contain run and the library (from what the run's recorder
// gathered, on Linux, macOS and Windows alike) and the crash guard (from
// what it found and ended after contain died). Each gives the report's
// parts in its own terms (Run: how COMMAND and contain ended, the limits,
// the Facts); Build lays them out as docs/REPORT.md says, every field it
// could not know absent with the reason.
package account

import (
	"time"

	"github.com/contain-cli/contain/report"
)

// Facts are what a run gathered while it held its group: the moments,
// the layers, what the group used, the processes left when COMMAND ended
// and those contain ended. The OS's runner (or the crash guard) gathers
// them; Build reports them.
type Facts struct {
	Started      time.Time // COMMAND started
	CommandEnded time.Time
	Ended        time.Time // the group was closed
	Layers       []string
	Resources    report.Resources
	Leftovers    []report.Leftover
	// Untold: the processes that tracking alone could not tell
	// (report.Untold); ContainmentFailure: what broke containment.
	Untold             []report.Untold
	ContainmentFailure string
	// EndedByContain are the processes contain ended (see
	// report.Report.EndedByContain).
	EndedByContain []report.Ended
	// KilledAfterTimeout: --kill-after's SIGKILL was sent.
	KilledAfterTimeout bool
	// ToldToStop names the signal (or Windows console event) that told
	// contain to stop, if one did.
	ToldToStop string
}

// Run is what a report says of one run besides its Facts.
type Run struct {
	// WrittenBy is the writer: "contain", "guard".
	WrittenBy  string
	Command    []string
	ContainPID int
	Tag        string
	// Ending is how COMMAND and contain ended, each field that is not
	// known absent in Ending.Absent with the reason.
	Ending report.Ending
	// Limits are the whole-tree limits asked for and what became of them.
	Limits map[string]report.Limit
	// Facts: what the run gathered; nil where nothing ran in the group,
	// NoFacts then says why, and the report's times are Began and now.
	Facts   *Facts
	NoFacts string
	Began   time.Time
	// Absent names the top-level fields the writer could not know, and
	// why.
	Absent map[string]string
}

// Build is the report of run r.
func Build(r Run) *report.Report {
	out := report.New(r.WrittenBy)
	out.Command, out.ContainPID, out.Tag = r.Command, r.ContainPID, r.Tag
	out.Ending, out.Limits = r.Ending, r.Limits
	out.Absent = map[string]string{}
	for k, v := range r.Absent {
		out.Absent[k] = v
	}
	f := r.Facts
	if f == nil {
		out.Started, out.Ended = report.Time{Time: r.Began}, report.Time{Time: time.Now()}
		out.WallSeconds = out.Ended.Sub(r.Began).Seconds()
		why := r.NoFacts
		out.Absent["resources"], out.Absent["leftovers"], out.Absent["containment"] = why, why, why
		out.Resources.Absent = map[string]string{"all": why}
		return tidy(out)
	}
	out.Started, out.Ended = report.Time{Time: f.Started}, report.Time{Time: f.Ended}
	out.WallSeconds = f.Ended.Sub(f.Started).Seconds()
	if f.Layers != nil {
		out.Containment = f.Layers
	}
	out.Resources = f.Resources
	out.Leftovers = append(out.Leftovers, f.Leftovers...)
	out.Untold, out.ContainmentFailure = f.Untold, f.ContainmentFailure
	out.EndedByContain = append(out.EndedByContain, f.EndedByContain...)
	return tidy(out)
}

// tidy drops the Absent maps that say nothing.
func tidy(r *report.Report) *report.Report {
	if len(r.Absent) == 0 {
		r.Absent = nil
	}
	if len(r.Ending.Absent) == 0 {
		r.Ending.Absent = nil
	}
	if len(r.Resources.Absent) == 0 {
		r.Resources.Absent = nil
	}
	return r
}
