//go:build linux || darwin

package guard

import (
	"reflect"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
)

func TestParseGuardOrders(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Orders
		bad  bool
	}{
		{in: "", want: Orders{}},
		{in: "session CONTAIN:12 2s true\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Verbose: true}},
		{in: "session CONTAIN:12 500ms false\ncommand 13 4567\n",
			want: Orders{Value: "CONTAIN:12", Grace: 500 * time.Millisecond, Pgrp: 13, Since: 4567}},
		// contain died while writing: the cut line is not read.
		{in: "session CONTAIN:12 2s false\ncomma", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second}},
		{in: "session CONTAIN:1", want: Orders{}},
		// The timeout signal, and whether the guard sends it to COMMAND.
		{in: "session CONTAIN:12 2s false 15 true\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Signal: 15, SignalCommand: true}},
		{in: "session CONTAIN:12 2s false 15 maybe\n", bad: true},
		{in: "session CONTAIN:12 soon false\n", bad: true},
		{in: "command x 1\n", bad: true},
		{in: "hello\n", bad: true},
		{in: "session CONTAIN:12 2s false\ncommand 13 4567\nmember 20 4600\nmember 21 4601\nmember 2",
			want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Pgrp: 13, Since: 4567, Members: []proc.ID{{PID: 20, Start: 4600}, {PID: 21, Start: 4601}}}},
		{in: "member 20 x\n", bad: true},
		// The --on-timeout command runs, then has been ended by contain.
		{in: "session CONTAIN:12 2s false\nhook 30 4700\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Hook: proc.ID{PID: 30, Start: 4700}}},
		{in: "session CONTAIN:12 2s false\nhook 30 4700\nhook-end\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second}},
		{in: "hook 30\n", bad: true},
		// A shim that ended before it started COMMAND: there is none.
		{in: "session CONTAIN:12 2s false\nshim 40 4800\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Shim: proc.ID{PID: 40, Start: 4800}}},
		{in: "session CONTAIN:12 2s false\nshim 40 4800\nshim 0 0\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second}},
		{in: "session CONTAIN:12 2s false\nreport {\"path\":\"/tmp/a b.json\",\"command\":[\"sh\",\"-c\",\"x y\"],\"started\":\"2026-11-22T15:04:05Z\"}\n",
			want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Report: &ReportOrder{Path: "/tmp/a b.json", Command: []string{"sh", "-c", "x y"}, Started: time.Date(2026, 11, 22, 15, 4, 5, 0, time.UTC)}}},
		{in: "report {\n", bad: true},
		// The run's cgroup, and what enabling its limits changed.
		{in: "session CONTAIN:12 2s false\ncgroup {\"dir\":\"/sys/fs/cgroup/job x/contain-12\",\"parent\":\"/sys/fs/cgroup/job x\",\"leaf\":\"/sys/fs/cgroup/job x/contain-12.self\",\"enabled\":[\"memory\",\"pids\"]}\n",
			want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Cgroup: &CgroupOrder{Dir: "/sys/fs/cgroup/job x/contain-12", Parent: "/sys/fs/cgroup/job x",
				Leaf: "/sys/fs/cgroup/job x/contain-12.self", Enabled: []string{"memory", "pids"}}}},
		{in: "cgroup {\"dir\":\n", bad: true},
		// The session's marker (no cgroup): its pipe's inode.
		{in: "session CONTAIN:12 2s false\nmarker 15747903\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Marker: 15747903}},
		{in: "marker x\n", bad: true},
		// macOS: the marker's pair of handles, whose kept end the guard holds.
		{in: "session CONTAIN:12 2s false\nmarker 11 22\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second, Pair: track.Marker{Held: 11, Kept: 22}}},
		{in: "marker 0 22\n", bad: true},
		{in: "marker 11 x\n", bad: true},
		// Members' lineages (macOS), for what they forked after contain died.
		{in: "session CONTAIN:12 2s false\nlineage 9001 77\nlineage 9002 0\n", want: Orders{Value: "CONTAIN:12", Grace: 2 * time.Second,
			Lineage: []proc.MacIDs{{UniqueID: 9001, IDVersion: 77}, {UniqueID: 9002}}}},
		{in: "lineage 0 1\n", bad: true},
		{in: "lineage 9001\n", bad: true},
	} {
		got, err := ParseOrders([]byte(c.in))
		if (err != nil) != c.bad || (!c.bad && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("ParseOrders(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}
