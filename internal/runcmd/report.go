package runcmd

import (
	"io"
	"os"
	"time"

	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/report"
)

// finishReport writes the report (path "" : none) and, with -v, its
// summary line. A report that cannot be written is one line on stderr;
// it changes nothing else.
func finishReport(path string, o run.Options, began time.Time, res *run.Result, code int, startErr error, stderr io.Writer) {
	if path == "" && o.Log == nil {
		return
	}
	r := buildReport(o, began, res, code, startErr)
	if o.Log != nil && res != nil && !o.Detach {
		o.Log("%s", report.Summary(r))
	}
	if path == "" {
		return
	}
	if err := report.Write(path, r, stderr); err != nil {
		text.Fprintf(stderr, "contain: cannot write the report: %v\n", err)
	}
}

// buildReport puts together what contain knows of the run.
func buildReport(o run.Options, began time.Time, res *run.Result, code int, startErr error) *report.Report {
	r := report.New("contain")
	r.Command, r.ContainPID, r.Tag = o.Args, os.Getpid(), o.Tag
	r.Started, r.Ended = report.Time{Time: began}, report.Time{Time: time.Now()}
	r.Absent = map[string]string{}
	e := &r.Ending
	e.Absent = map[string]string{}
	e.ContainExitStatus = report.Ptr(code)
	if endSignal != 0 {
		e.ContainSignal = signals.Name(endSignal)
	}
	switch {
	case startErr != nil:
		e.Absent["exit_code"] = "COMMAND could not be started: " + startErr.Error()
	case o.Detach:
		e.Absent["exit_code"] = "detached: contain does not wait for COMMAND"
	case res.Exited:
		e.ExitCode = report.Ptr(res.Code)
	case res.Signaled:
		e.Signal = signals.Name(res.Signal)
	}
	if res != nil && !o.Detach {
		e.TimedOut = report.Ptr(res.TimedOut)
		r.Limits = res.Limits.Report()
	}
	f := (*run.Facts)(nil)
	if res != nil {
		f = res.Facts
	}
	if f == nil {
		why := "nothing ran inside contain's group"
		r.Absent["resources"], r.Absent["leftovers"], r.Absent["containment"] = why, why, why
		r.WallSeconds = r.Ended.Sub(began).Seconds()
		r.Resources.Absent = map[string]string{"all": why}
		return r
	}
	r.Started, r.Ended = report.Time{Time: f.Started}, report.Time{Time: f.Ended}
	r.WallSeconds = f.Ended.Sub(f.Started).Seconds()
	e.KilledAfterTimeout = report.Ptr(f.KilledAfterTimeout)
	e.ToldToStop = f.ToldToStop
	r.Containment = f.Layers
	r.Resources = f.Resources
	r.Leftovers = append(r.Leftovers, f.Leftovers...)
	r.Untold, r.ContainmentFailure = f.Untold, f.ContainmentFailure
	r.EndedByContain = append(r.EndedByContain, f.EndedByContain...)
	if len(r.Absent) == 0 {
		r.Absent = nil
	}
	if len(e.Absent) == 0 {
		e.Absent = nil
	}
	if len(r.Resources.Absent) == 0 {
		r.Resources.Absent = nil
	}
	return r
}
