package daemon

import (
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

func TestParseClaim(t *testing.T) {
	for _, c := range []struct {
		line string
		want proc.ID
		ok   bool
	}{
		{"123 456", proc.ID{PID: 123, Start: 456}, true},
		{"2 0", proc.ID{PID: 2, Start: 0}, true},
		{"1073741824 18446744073709551615", proc.ID{PID: 1 << 30, Start: 1<<64 - 1}, true},
		{"", proc.ID{}, false},
		{"123", proc.ID{}, false},
		{"123 ", proc.ID{}, false},
		{" 123 456", proc.ID{}, false},
		{"123  456", proc.ID{}, false},
		{"123 456 ", proc.ID{}, false},
		{"123 456 789", proc.ID{}, false},
		{"123\t456", proc.ID{}, false},
		{"-1 456", proc.ID{}, false},
		{"+5 456", proc.ID{}, false},
		{"0 456", proc.ID{}, false},
		{"1 456", proc.ID{}, false},
		{"0123 456", proc.ID{}, false},
		{"123 0456", proc.ID{}, false},
		{"1073741825 1", proc.ID{}, false},
		{"123 18446744073709551616", proc.ID{}, false},
		{"99999999999999999999 1", proc.ID{}, false},
		{"0x10 1", proc.ID{}, false},
		{"123 456\r", proc.ID{}, false},
		{"١٢٣ 456", proc.ID{}, false},
	} {
		id, err := ParseClaim(c.line)
		if (err == nil) != c.ok || id != c.want {
			t.Errorf("ParseClaim(%q) = %+v, %v; want %+v, ok %t", c.line, id, err, c.want, c.ok)
		}
	}
}

func FuzzParseClaim(f *testing.F) {
	for _, s := range []string{"123 456", "2 0", "", " ", "0 0", "-1 2", "1073741824 18446744073709551615", "12 34 56", "1\x002"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		id, err := ParseClaim(line)
		if err != nil {
			if id != (proc.ID{}) {
				t.Fatalf("%q: an error with an ID %+v", line, id)
			}
			return
		}
		if id.PID <= 1 || id.PID > 1<<30 {
			t.Fatalf("%q: PID %d", line, id.PID)
		}
		// What is accepted is exactly what contain run -d writes.
		if back := FormatClaim(id); back != line+"\n" {
			t.Fatalf("%q read as %+v, written back as %q", line, id, back)
		}
	})
}

func TestClaimedEnv(t *testing.T) {
	for _, c := range []struct {
		env            string
		tagged, marked bool
	}{
		{"A=1\x00RUNNING_PROCESS_ORIGINATOR=CONTAIN:5\x00RUNNING_PROCESS_IS_DAEMON=1\x00", true, true},
		{"RUNNING_PROCESS_ORIGINATOR=CONTAIN:5\x00RUNNING_PROCESS_IS_DAEMON=\x00", true, false},
		{"RUNNING_PROCESS_ORIGINATOR=CONTAIN:5\x00RUNNING_PROCESS_IS_DAEMON=0\x00", true, false},
		{"RUNNING_PROCESS_ORIGINATOR=CONTAIN:5\x00", true, false},
		{"RUNNING_PROCESS_IS_DAEMON=1\x00", false, true},
		{"redis-server *:6379\x00\x00\x00\x00", false, false},
		{"", false, false},
		{"XRUNNING_PROCESS_IS_DAEMON=1\x00RUNNING_PROCESS_ORIGINATOR", false, false},
	} {
		tagged, marked := ClaimedEnv([]byte(c.env))
		if tagged != c.tagged || marked != c.marked {
			t.Errorf("ClaimedEnv(%q) = %t, %t; want %t, %t", c.env, tagged, marked, c.tagged, c.marked)
		}
	}
}

func TestDetachArgv(t *testing.T) {
	for _, c := range []struct {
		argv string
		want bool
	}{
		{"contain run -d -- sleep 1", true},
		{"contain run -d sleep 1", true},
		{"/usr/bin/contain run --detach -- sleep 1", true},
		{"contain run -detach -- x", true},
		{"contain run --detach=true -- x", true},
		{"contain run -d=1 x", true},
		{"contain run -o TOOL -d -- x", true},
		{"contain run -o -d -- x", false}, // -d is -o's value
		{"contain run --originator=T -v -d x", true},
		{"contain run -v --report r.json --detach x", true},
		{"contain run -d --detach=false x", false},
		{"contain run -vd -- x", true},
		{"contain run -dv x", true},
		{"contain run -pvd x", true},
		{"contain run -vt5 -d x", true},
		{"contain run -vt 5 -d x", true},
		{"contain run -vt -d x", false}, // -d is -t's value
		{"contain run -td x", false},    // -t with the value d
		{"contain run -timeout 5 -d x", true},
		{"contain run -sKILL -k5 -d x", true},
		{"contain run -- -d", false},
		{"contain run sleep -d", false},
		{"contain run -- sleep 3", false},
		{"contain run", false},
		{"contain -d run x", false},
		{"contain stop -d", false},
		{"contain run --- -d x", false},
		{"contain", false},
		{"", false},
	} {
		if got := DetachArgv(strings.Fields(c.argv)); got != c.want {
			t.Errorf("DetachArgv(%q) = %t, want %t", c.argv, got, c.want)
		}
	}
}
