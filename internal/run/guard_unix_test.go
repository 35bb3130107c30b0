//go:build linux || darwin

package run

import (
	"reflect"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
)

func TestParseGuardOrders(t *testing.T) {
	for _, c := range []struct {
		in   string
		want guardOrders
		bad  bool
	}{
		{in: "", want: guardOrders{}},
		{in: "session CONTAIN:12 2s true\n", want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second, verbose: true}},
		{in: "session CONTAIN:12 500ms false\ncommand 13 4567\n",
			want: guardOrders{value: "CONTAIN:12", grace: 500 * time.Millisecond, pgrp: 13, since: 4567}},
		// contain died while writing: the cut line is not read.
		{in: "session CONTAIN:12 2s false\ncomma", want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second}},
		{in: "session CONTAIN:1", want: guardOrders{}},
		{in: "session CONTAIN:12 soon false\n", bad: true},
		{in: "command x 1\n", bad: true},
		{in: "hello\n", bad: true},
		{in: "session CONTAIN:12 2s false\ncommand 13 4567\nmember 20 4600\nmember 21 4601\nmember 2",
			want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second, pgrp: 13, since: 4567, members: []proc.ID{{PID: 20, Start: 4600}, {PID: 21, Start: 4601}}}},
		{in: "member 20 x\n", bad: true},
		// The --on-timeout command runs, then has been ended by contain.
		{in: "session CONTAIN:12 2s false\nhook 30 4700\n", want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second, hook: proc.ID{PID: 30, Start: 4700}}},
		{in: "session CONTAIN:12 2s false\nhook 30 4700\nhook-end\n", want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second}},
		{in: "hook 30\n", bad: true},
		{in: "session CONTAIN:12 2s false\nreport {\"path\":\"/tmp/a b.json\",\"command\":[\"sh\",\"-c\",\"x y\"],\"started\":\"2026-11-22T15:04:05Z\"}\n",
			want: guardOrders{value: "CONTAIN:12", grace: 2 * time.Second, report: &guardReportOrder{Path: "/tmp/a b.json", Command: []string{"sh", "-c", "x y"}, Started: time.Date(2026, 11, 22, 15, 4, 5, 0, time.UTC)}}},
		{in: "report {\n", bad: true},
	} {
		got, err := parseGuardOrders([]byte(c.in))
		if (err != nil) != c.bad || (!c.bad && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("parseGuardOrders(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}
