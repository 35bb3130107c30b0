package account

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/contain-cli/contain/report"
)

func TestBuildWithoutFacts(t *testing.T) {
	began := time.Now().Add(-time.Second)
	r := Build(Run{WrittenBy: "contain", Command: []string{"nope"}, ContainPID: 7, Tag: "CONTAIN:7", Began: began,
		NoFacts: "nothing ran inside contain's group",
		Ending:  report.Ending{ContainExitStatus: report.Ptr(127), Absent: map[string]string{"exit_code": "COMMAND could not be started"}}})
	if r.WrittenBy != "contain" || r.ContainPID != 7 || r.Tag != "CONTAIN:7" || r.Command[0] != "nope" {
		t.Fatalf("header: %+v", r)
	}
	for _, f := range []string{"resources", "leftovers", "containment"} {
		if r.Absent[f] != "nothing ran inside contain's group" {
			t.Errorf("absent[%s] = %q", f, r.Absent[f])
		}
	}
	if r.Resources.Absent["all"] == "" {
		t.Errorf("resources.absent: %v", r.Resources.Absent)
	}
	if !r.Started.Equal(began) || r.WallSeconds < 1 {
		t.Errorf("times: started %v wall %v", r.Started, r.WallSeconds)
	}
	if *r.Ending.ContainExitStatus != 127 || r.Ending.Absent["exit_code"] == "" {
		t.Errorf("ending: %+v", r.Ending)
	}
}

func TestBuildWithFacts(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := &Facts{Started: start, Ended: start.Add(1500 * time.Millisecond), Layers: []string{"cgroup"},
		Resources:      report.Resources{Sources: map[string]string{"cpu": "x"}, Absent: map[string]string{}},
		Leftovers:      []report.Leftover{{PID: 42, Comm: "sleep", Argv: []string{"sleep", "9"}}},
		EndedByContain: []report.Ended{{PID: 42, Signal: "SIGTERM"}}, ContainmentFailure: "the shim was killed"}
	r := Build(Run{WrittenBy: "guard", Facts: f, Ending: report.Ending{Absent: map[string]string{}},
		Absent: map[string]string{"containment": "contain was killed"}})
	if r.WallSeconds != 1.5 || !r.Ended.Equal(f.Ended) {
		t.Errorf("wall %v ended %v", r.WallSeconds, r.Ended)
	}
	if len(r.Leftovers) != 1 || r.Leftovers[0].PID != 42 || len(r.EndedByContain) != 1 || r.ContainmentFailure == "" {
		t.Errorf("lists: %+v %+v", r.Leftovers, r.EndedByContain)
	}
	if r.Containment[0] != "cgroup" || r.Absent["containment"] != "contain was killed" {
		t.Errorf("containment %v absent %v", r.Containment, r.Absent)
	}
	// Empty Absent maps say nothing: they are left out of the JSON.
	if r.Ending.Absent != nil || r.Resources.Absent != nil {
		t.Errorf("empty absents kept: %v %v", r.Ending.Absent, r.Resources.Absent)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"written_by":"guard"`, `"wall_seconds":1.5`, `"sources":{"cpu":"x"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

// A run without layers (the crash guard does not know them) shows an
// empty list, never null.
func TestBuildNoLayers(t *testing.T) {
	r := Build(Run{WrittenBy: "guard", Facts: &Facts{Resources: report.Resources{Sources: map[string]string{}}}})
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"containment":[]`) || !strings.Contains(string(b), `"leftovers":[]`) {
		t.Errorf("lists not empty arrays: %s", b)
	}
}
