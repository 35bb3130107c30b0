package peb

import (
	"slices"
	"testing"
	"unicode/utf16"
)

// le encodes s as little-endian UTF-16, as a Windows process holds it.
func le(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func TestEnvBlock(t *testing.T) {
	cases := []struct {
		name  string
		block []byte
		want  []string
	}{
		{"usual", le("=C:=C:\\work\x00PATH=C:\\bin\x00RUNNING_PROCESS_ORIGINATOR=CONTAIN:42\x00\x00"),
			[]string{"=C:=C:\\work", "PATH=C:\\bin", "RUNNING_PROCESS_ORIGINATOR=CONTAIN:42"}},
		{"garbage after the end", append(le("A=1\x00\x00"), le("B=2\x00\x00")...), []string{"A=1"}},
		{"cut short mid-entry", le("A=1\x00B=2\x00C=3")[:18], []string{"A=1", "B=2"}},
		{"odd length", append(le("A=1\x00\x00"), 0x41), []string{"A=1"}},
		{"empty", le("\x00\x00"), nil},
		{"nothing", nil, nil},
		{"not UTF-16 aligned NUL pairs", []byte{'A', 0, 0, 'B', 0, 0, 0, 0}, []string{"A\u4200"}},
		{"non-ASCII", le("NAME=Grüße ✓ 🙂\x00\x00"), []string{"NAME=Grüße ✓ 🙂"}},
		{"lone surrogate", []byte{'X', 0, '=', 0, 0x00, 0xD8, 0, 0, 0, 0}, []string{"X=\uFFFD"}},
	}
	for _, c := range cases {
		if got := EnvBlock(c.block); !slices.Equal(got, c.want) {
			t.Errorf("%s: EnvBlock = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTerminated(t *testing.T) {
	for _, c := range []struct {
		block []byte
		want  bool
	}{
		{le("A=1\x00B=2\x00\x00"), true},
		{le("\x00\x00"), true},
		{le("A=1\x00B=2\x00"), false}, // cut before its end
		{le("A=1\x00B=2"), false},
		{nil, false},
		{append(le("A=1\x00\x00"), 'x'), true},
	} {
		if got := Terminated(c.block); got != c.want {
			t.Errorf("Terminated(%q) = %v, want %v", c.block, got, c.want)
		}
	}
}

func TestArgs(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`contain.exe run -- cmd /c exit 3`, []string{"contain.exe", "run", "--", "cmd", "/c", "exit", "3"}},
		{`"C:\Program Files\x.exe" a b`, []string{`C:\Program Files\x.exe`, "a", "b"}},
		{`"C:\dir\"x.exe a`, []string{`C:\dir\`, "x.exe", "a"}}, // no escapes in the program name
		{`x "a b" c`, []string{"x", "a b", "c"}},
		{`x a\\\"b`, []string{"x", `a\"b`}},
		{`x a\\"b c"`, []string{"x", `a\b c`}},
		{`x a\b\c`, []string{"x", `a\b\c`}},
		{`x "a\\" b`, []string{"x", `a\`, "b"}},
		{`x "" ""`, []string{"x", "", ""}},
		{`x "a""b" c`, []string{"x", `a"b`, "c"}},
		{"x\t a \t", []string{"x", "a"}},
		{`x "unterminated arg`, []string{"x", "unterminated arg"}},
		{`x a"b c"d`, []string{"x", "ab cd"}},
		{``, []string{""}},
		{`prog`, []string{"prog"}},
	}
	for _, c := range cases {
		if got := Args(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Args(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzEnvBlock: any bytes decode without panic and without empty entries,
// and the entries, encoded again as a block, decode back to themselves.
func FuzzEnvBlock(f *testing.F) {
	f.Add([]byte("A\x00=\x001\x00\x00\x00"))
	f.Add(le("RUNNING_PROCESS_ORIGINATOR=X:1\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		env := EnvBlock(b)
		var block []byte
		for _, e := range env {
			if e == "" {
				t.Fatalf("EnvBlock(%q) has an empty entry", b)
			}
			block = append(block, le(e+"\x00")...)
		}
		block = append(block, 0, 0)
		if again := EnvBlock(block); !slices.Equal(again, env) {
			t.Fatalf("EnvBlock(%q) = %q, but its entries as a block decode to %q", b, env, again)
		}
	})
}

// FuzzArgs: any command line splits without panic.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`a "b c" d\\"e`, `"x`, `\\\\"`, `""""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(Args(s)) == 0 {
			t.Fatalf("Args(%q) is empty", s)
		}
	})
}
