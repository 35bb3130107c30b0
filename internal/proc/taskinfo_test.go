package proc

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/contain-cli/contain/session"
)

func TestMacTimebaseOf(t *testing.T) {
	for _, c := range []struct {
		freq       uint64
		arch       string
		translated bool
		want       MacTimebase
	}{
		{24_000_000, "arm64", false, MacTimebase{125, 3}},     // Apple silicon's 24 MHz timer
		{24_000_000, "amd64", true, MacTimebase{125, 3}},      // the same, under Rosetta
		{1_000_000_000, "amd64", false, MacTimebase{1, 1}},    // Intel: nanoseconds
		{0, "arm64", false, MacTimebase{125, 3}},              // no sysctl: by the machine
		{0, "amd64", true, MacTimebase{125, 3}},               // Rosetta on Apple silicon
		{0, "amd64", false, MacTimebase{1, 1}},                // Intel
		{5, "amd64", false, MacTimebase{1, 1}},                // nonsense: by the machine
		{19_200_000, "arm64", false, MacTimebase{625, 12}},    // another timer frequency
		{1 << 40, "arm64", false, MacTimebase{125, 3}},        // nonsense
		{3_000_000_000, "amd64", false, MacTimebase{1, 3}},    // a faster counter
		{1_000_000, "amd64", false, MacTimebase{1000, 1}},     // the slowest taken
		{10_000_000_000, "amd64", false, MacTimebase{1, 10}},  // the fastest taken
		{10_000_000_001, "arm64", false, MacTimebase{125, 3}}, // beyond it
	} {
		if got := MacTimebaseOf(c.freq, c.arch, c.translated); got != c.want {
			t.Errorf("MacTimebaseOf(%d, %s, %v) = %v, want %v", c.freq, c.arch, c.translated, got, c.want)
		}
	}
}

func TestMacTimebaseDuration(t *testing.T) {
	silicon := MacTimebase{125, 3}
	for _, c := range []struct {
		tb   MacTimebase
		n    uint64
		want time.Duration
	}{
		{silicon, 24_000_000, time.Second}, // one second of a 24 MHz timer
		{silicon, 3, 125},
		{silicon, 1, 41},
		{silicon, 0, 0},
		{MacTimebase{1, 1}, 1_500_000_000, 1500 * time.Millisecond},
		{silicon, 24_000_000 * 86400 * 365, 365 * 24 * time.Hour}, // n*125 would still fit; the split is exact
		{silicon, 1 << 62, 1<<63 - 1},                             // beyond time.Duration: the most it holds
		{MacTimebase{}, 5, 0},
	} {
		if got := c.tb.Duration(c.n); got != c.want {
			t.Errorf("%v.Duration(%d) = %v, want %v", c.tb, c.n, got, c.want)
		}
	}
}

// taskInfo is a struct proc_taskinfo as XNU copies it out.
func taskInfo(virt, rss, user, sys uint64) []byte {
	b := make([]byte, macTaskInfoSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], virt)
	le.PutUint64(b[8:], rss)
	le.PutUint64(b[16:], user)
	le.PutUint64(b[24:], sys)
	le.PutUint64(b[32:], 7) // pti_threads_user: live threads only, not read
	le.PutUint64(b[40:], 7)
	for i := 48; i < len(b); i += 4 {
		le.PutUint32(b[i:], 0xffffffff) // the int32 counters
	}
	return b
}

func TestMacTaskUsage(t *testing.T) {
	if macTaskInfoSize != 96 {
		t.Fatalf("sizeof(struct proc_taskinfo) is 96, not %d", macTaskInfoSize)
	}
	// 1.5 s user and 0.25 s system on Apple silicon, 64 MiB resident.
	b := taskInfo(400<<30, 64<<20, 36_000_000, 6_000_000)
	u, err := MacTaskUsage(b, MacTimebase{125, 3})
	want := session.Usage{CPU: 1750 * time.Millisecond, RSS: 64 << 20, Known: true}
	if err != nil || u != want {
		t.Errorf("MacTaskUsage = %+v, %v; want %+v", u, err, want)
	}
	u, err = MacTaskUsage(b, MacTimebase{1, 1})
	want.CPU = 42 * time.Millisecond
	if err != nil || u != want {
		t.Errorf("in nanoseconds: %+v, %v; want %+v", u, err, want)
	}
	for _, n := range []int{0, 8, 95} {
		if u, err := MacTaskUsage(b[:n], MacTimebase{1, 1}); err == nil || u.Known {
			t.Errorf("%d bytes: %+v, no error", n, u)
		}
	}
}
