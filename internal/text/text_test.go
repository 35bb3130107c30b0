package text

import (
	"testing"
	"time"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"sleep 300":        "sleep 300",
		"ümlaut":           "ümlaut",
		"\x1b]0;pwned\x07": `\x1b]0;pwned\a`,
		"a\nb":             `a\nb`,
		"bad\xffutf8":      `bad\xffutf8`,
		"tab\there":        `tab\there`,
		"RUNNING:1\x7f":    `RUNNING:1\x7f`,
		"":                 "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCPUTimeAndMemSize(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                       "0:00.00",
		9 * time.Millisecond:                    "0:00.00",
		1230 * time.Millisecond:                 "0:01.23",
		59990 * time.Millisecond:                "0:59.99",
		time.Minute:                             "1:00.00",
		125*time.Minute + 4500*time.Millisecond: "125:04.50",
		-time.Second:                            "0:00.00",
	} {
		if got := CPUTime(d); got != want {
			t.Errorf("CPUTime(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[uint64]string{
		0:            "0.0K",
		512:          "0.5K",
		4096:         "4.0K",
		980 << 10:    "980.0K",
		1023 << 10:   "1023.0K",
		1024<<10 - 1: "1.0M",
		12900 << 10:  "12.6M",
		64 << 20:     "64.0M",
		1536 << 20:   "1.5G",
		3 << 40:      "3.0T",
		1<<64 - 1:    "16.0E",
	} {
		if got := MemSize(n); got != want {
			t.Errorf("MemSize(%d) = %q, want %q", n, got, want)
		}
	}
}
