package runcmd

import (
	"errors"
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
		switch {
		case ns >= math.MaxInt64: // practically never, as GNU's largest timer
			return time.Duration(math.MaxInt64), nil
		case ns < 1 && nonZero(num):
			// A positive duration too small to hold (1e-10000) is the
			// shortest one, as GNU rounds it up, never "no timeout".
			return time.Nanosecond, nil
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
	if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 1) {
		return f, true // 1e4932: past a float64, so past any timer
	}
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// nonZero reports whether the number s has a non-zero digit in its
// mantissa (before any exponent): 1e-10000 has, 0.000e5 has not.
func nonZero(s string) bool {
	hex := strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")
	if hex {
		s = s[2:]
	}
	for _, c := range s {
		switch {
		case c >= '1' && c <= '9':
			return true
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return true
		case c == 'e' || c == 'E' || c == 'p' || c == 'P':
			return false
		}
	}
	return false
}
