package run

import (
	"reflect"
	"testing"

	"github.com/contain-cli/contain/report"
)

// TestOOMVictims: the kernel's records as Linux 6.x writes them; only
// the OOM kills for the run's own memory cgroup are its victims.
func TestOOMVictims(t *testing.T) {
	records := []string{
		"vmtest invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
		"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/contain-41,task_memcg=/contain-41,task=other,pid=99,uid=0",
		"Memory cgroup out of memory: Killed process 99 (other) total-vm:1000kB, anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:60kB oom_score_adj:0",
		"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/user.slice/contain-42,task_memcg=/user.slice/contain-42,task=vmtest,pid=1234,uid=1000",
		"Memory cgroup out of memory: Killed process 1234 (vmtest) total-vm:431272kB, anon-rss:64512kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:204kB oom_score_adj:0",
	}
	rss := uint64(65536) << 10
	want := []report.Holder{{PID: 1234, Comm: "vmtest", RSSBytes: &rss}}
	if got := oomVictims(records, "/user.slice/contain-42"); !reflect.DeepEqual(got, want) {
		t.Errorf("oomVictims = %+v, want %+v", got, want)
	}
	if got := oomVictims(records, "/contain-4"); got != nil {
		t.Errorf("another cgroup's kills: %+v", got)
	}
}
