package reap

import (
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/session"
)

// TestSurveyPlans: what reap leaves alone and what a dry run says, from
// one survey: contain reap and containment.Reap print the same.
func TestSurveyPlans(t *testing.T) {
	sv := &Survey{
		Chosen: []session.Choice{
			{Process: session.Process{PID: 10, Start: 100}, Session: "CONTAIN:1"},
			{Process: session.Process{PID: 11, Start: 101}, Session: "CONTAIN:1", Skip: "another user's"},
			{Process: session.Process{PID: 12, Start: 102}, Session: "CONTAIN:2"},
		},
		Cgroups: []cgroup.Leftover{
			{Dir: "/sys/fs/cgroup/contain-1", PID: 1, Procs: []int{10}},
			{Dir: "/sys/fs/cgroup/contain-3", PID: 3},
			{Dir: "/sys/fs/cgroup/contain-4", PID: 4, Skip: "not yours"},
			{Dir: "/sys/fs/cgroup/system.slice/contain-5.scope", PID: 5, Procs: []int{12}},
		},
	}
	alone := sv.LeftAlone()
	if len(alone.Processes) != 1 || alone.Processes[0].PID != 11 || alone.Processes[0].Result() != "left alone: another user's" || !alone.Processes[0].Alive {
		t.Errorf("left alone: %+v", alone.Processes)
	}
	if len(alone.Cgroups) != 1 || alone.Cgroups[0].Result != "left alone: not yours" {
		t.Errorf("cgroups left alone: %+v", alone.Cgroups)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGTERM, "would send SIGTERM, then SIGKILL after 2s"},
		{syscall.SIGKILL, "would send SIGKILL"},
	} {
		dry, in := sv.DryRun(Plan{Signal: tc.sig, Grace: 2 * time.Second})
		if len(dry.Processes) != 2 || dry.Processes[0].PID != 10 || dry.Processes[1].PID != 12 {
			t.Fatalf("dry run of %v: %+v", tc.sig, dry.Processes)
		}
		for _, o := range dry.Processes {
			if o.Ending != Planned || !o.Alive || o.Detail != tc.want {
				t.Errorf("dry run of %v: %d %v %q alive %v, want Planned %q, alive", tc.sig, o.PID, o.Ending, o.Detail, o.Alive, tc.want)
			}
		}
		// A systemd scope's directory is systemd's to remove.
		want := []string{"would freeze, kill and remove (1 process)", "would remove (it is empty)", "would freeze and kill (1 process); systemd stops the emptied scope"}
		if len(dry.Cgroups) != 3 || dry.Cgroups[0].Result != want[0] || dry.Cgroups[1].Result != want[1] || dry.Cgroups[2].Result != want[2] {
			t.Errorf("dry run's cgroups: %+v", dry.Cgroups)
		}
		if in[proc.ID{PID: 10, Start: 100}] != "/sys/fs/cgroup/contain-1" || in[proc.ID{PID: 12, Start: 102}] != "/sys/fs/cgroup/system.slice/contain-5.scope" || len(in) != 2 {
			t.Errorf("in cgroup: %v", in)
		}
	}
}
