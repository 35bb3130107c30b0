package runcmd

import (
	"math"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"0":       0,
		"10":      10 * time.Second,
		"0.5":     500 * time.Millisecond,
		".5":      500 * time.Millisecond,
		"5.":      5 * time.Second,
		"10s":     10 * time.Second,
		"2m":      2 * time.Minute,
		"1.5m":    90 * time.Second,
		"3h":      3 * time.Hour,
		"1d":      24 * time.Hour,
		"0.5d":    12 * time.Hour,
		"1e-1":    100 * time.Millisecond,
		"1m30s":   90 * time.Second,
		"250ms":   250 * time.Millisecond,
		"1h2m3s":  time.Hour + 2*time.Minute + 3*time.Second,
		"0s":      0,
		"inf":     time.Duration(math.MaxInt64),
		"1e300":   time.Duration(math.MaxInt64),
		"999999d": time.Duration(math.MaxInt64),
		// As GNU timeout 9.10: a positive duration that underflows is the
		// shortest one, a huge one practically never.
		"1e-10000":              time.Nanosecond,
		"1e-10000d":             time.Nanosecond,
		"0x1p-2000":             time.Nanosecond,
		"0e-10000":              0,
		"0.000":                 0,
		"9223372036854775808":   time.Duration(math.MaxInt64),
		"9223372036854775808d":  time.Duration(math.MaxInt64),
		"1e4932":                time.Duration(math.MaxInt64),
		"1e4932s":               time.Duration(math.MaxInt64),
		"18446744073709551616m": time.Duration(math.MaxInt64),
	}
	for in, want := range good {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := []string{"", "-1", "+1", "-1s", "abc", "5x", "1y", "s", "m", "d", ".", "nan", "NaN", "1 s", " 1", "1s ", "--1", "-1m30s", "1..2", "0x", "-1e-10000", "-1e4932"}
	for _, in := range bad {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}
