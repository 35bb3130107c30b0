package runcmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration reads a DURATION as GNU timeout does — a non-negative
// decimal number with an optional unit s, m, h or d (10, 0.5, 2m, 1d) — or
// as a Go duration (1m30s, 250ms). 0 means no timeout. Values past what a
// time.Duration holds (about 292 years) are clamped, as GNU clamps to the
// largest timer.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	num, unit := s, time.Second
	switch s[len(s)-1] {
	case 's':
		num = s[:len(s)-1]
	case 'm':
		num, unit = s[:len(s)-1], time.Minute
	case 'h':
		num, unit = s[:len(s)-1], time.Hour
	case 'd':
		num, unit = s[:len(s)-1], 24*time.Hour
	}
	if f, ok := plainNumber(num); ok {
		ns := f * float64(unit)
		if ns >= math.MaxInt64 {
			return time.Duration(math.MaxInt64), nil
		}
		return time.Duration(ns), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("invalid duration %q (want a number with an optional s, m, h or d, or a Go duration such as 1m30s)", s)
	}
	return d, nil
}

// plainNumber reads a non-negative decimal as C's strtod would, which GNU
// timeout uses (so 1e-1 and inf work), but without a sign and without NaN.
func plainNumber(s string) (float64, bool) {
	if s == "" || s[0] == '-' || s[0] == '+' {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
