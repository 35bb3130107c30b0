package text

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type name string

func (n name) String() string { return string(n) }

func TestSprintfEscapesEveryArgument(t *testing.T) {
	const hostile = "\x1b[2J\x1b]0;pwn\x07\ncontain: forged\u202e\u009b"
	for _, tc := range []struct {
		format string
		args   []any
		want   string
	}{
		{"reap: %d (%s) ended", []any{42, "sleep"}, "reap: 42 (sleep) ended"},
		{"%s", []any{hostile}, `\x1b[2J\x1b]0;pwn\a\ncontain: forged\u202e\u009b`},
		{"%v", []any{errors.New("open " + hostile)}, `open \x1b[2J\x1b]0;pwn\a\ncontain: forged\u202e\u009b`},
		{"%v", []any{[]string{"sh", hostile}}, `[sh \x1b[2J\x1b]0;pwn\a\ncontain: forged\u202e\u009b]`},
		{"%s", []any{name(hostile)}, `\x1b[2J\x1b]0;pwn\a\ncontain: forged\u202e\u009b`},
		{"%q", []any{hostile}, fmt.Sprintf("%q", hostile)},
		{"%-6s|%6s|%.2s", []any{"ab", "cd", "efgh"}, "ab    |    cd|ef"},
		{"%*d|%t|%v", []any{4, 7, true, 1.5}, "   7|true|1.5"},
		{"%d%%", []any{50}, "50%"},
	} {
		got := Sprintf(tc.format, tc.args...)
		if got != tc.want {
			t.Errorf("Sprintf(%q, %q) = %q, want %q", tc.format, tc.args, got, tc.want)
		}
		if strings.ContainsAny(got, "\x1b\x07\n\u009b\u202e") {
			t.Errorf("Sprintf(%q, ...) = %q: a control character reached the line", tc.format, got)
		}
	}
}

func TestLoggerAndLine(t *testing.T) {
	var b strings.Builder
	Logger(&b, "contain: ")("%d (%s) left", 7, "x\ncontain: forged")
	Line(&b, "contain: ", "y\x1b[2Jz")
	want := "contain: 7 (x\\ncontain: forged) left\ncontain: y\\x1b[2Jz\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
