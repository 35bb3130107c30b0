package tag

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateTool(t *testing.T) {
	good := []string{"CONTAIN", "a", "CLUD", "my-tool_1.2", strings.Repeat("x", 64)}
	for _, s := range good {
		if err := ValidateTool(s); err != nil {
			t.Errorf("ValidateTool(%q) = %v, want nil", s, err)
		}
	}
	bad := []string{"", "has space", "a:b", "tab\t", "nul\x00", "ümlaut", "x/y", "a=b", strings.Repeat("x", 65)}
	for _, s := range bad {
		if err := ValidateTool(s); !errors.Is(err, ErrBadTool) {
			t.Errorf("ValidateTool(%q) = %v, want ErrBadTool", s, err)
		}
	}
}

func TestParse(t *testing.T) {
	ok := []struct {
		in   string
		tool string
		pid  int
	}{
		{"CONTAIN:1234", "CONTAIN", 1234},
		{"CLUD:12345", "CLUD", 12345},
		{"a:b:7", "a:b", 7},
		{"X:1", "X", 1},
		{"X:2147483647", "X", 2147483647},
		{"X:007", "X", 7},
	}
	for _, c := range ok {
		tool, pid, err := Parse(c.in)
		if err != nil || tool != c.tool || pid != c.pid {
			t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d", c.in, tool, pid, err, c.tool, c.pid)
		}
	}
	bad := []string{"X", "X:", ":12", "X:0", "X:-1", "X:abc", "X:4294967296", "X:2147483648",
		"X: 1", "X :1", "X:1 ", "X:+1", "X:1\x00", "X\x00:1", "", ":", "X:12345678901"}
	for _, in := range bad {
		if _, _, err := Parse(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) err = %v, want ErrMalformed", in, err)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	v := Format("CONTAIN", 4242)
	if v != "CONTAIN:4242" {
		t.Fatalf("Format = %q", v)
	}
	tool, pid, err := Parse(v)
	if err != nil || tool != "CONTAIN" || pid != 4242 {
		t.Fatalf("Parse(Format) = %q %d %v", tool, pid, err)
	}
}

func TestSetEnv(t *testing.T) {
	env := []string{"A=1", Var + "=OLD:1", "B=2", Var + "=OLDER:2", Var + "X=keep"}
	got := SetEnv(env, Var, "NEW:3")
	want := []string{"A=1", "B=2", Var + "X=keep", Var + "=NEW:3"}
	if !slices.Equal(got, want) {
		t.Fatalf("SetEnv = %q, want %q", got, want)
	}
	got = SetEnv(env, Var, "")
	if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, Var+"=") }) {
		t.Fatalf("SetEnv with empty value kept the variable: %q", got)
	}
}

func TestSetEnvFoldsCaseOnWindows(t *testing.T) {
	env := []string{"=C:=C:\\work", "running_process_originator=OLD:1", "Path=C:\\bin", "Running_Process_Originator=OLD:2"}
	got := setEnv(env, Var, "NEW:3", true)
	want := []string{"=C:=C:\\work", "Path=C:\\bin", Var + "=NEW:3"}
	if !slices.Equal(got, want) {
		t.Fatalf("setEnv(fold) = %q, want %q", got, want)
	}
	if got := setEnv(env, Var, "NEW:3", false); len(got) != len(env)+1 {
		t.Fatalf("setEnv without folding dropped a differently cased name: %q", got)
	}
}

// FuzzParse: Parse never panics, accepts only TOOL:PID with a non-empty
// TOOL free of blanks and NUL and PID in 1..2^31-1, and what it accepts
// formats back to a value that parses the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"CONTAIN:1234", "CLUD:12345", "a:b:7", "X", "X:", ":12", "X:0", "X:-1", "X:abc",
		"X:4294967296", "X:2147483648", "X :1", "X\x00:1", "X:1 ", "X:+1", "X:007", "::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		tool, pid, err := Parse(value)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q): %v does not wrap ErrMalformed", value, err)
			}
			return
		}
		if tool == "" || strings.ContainsAny(tool, " \t\n\r\x00") || pid < 1 || pid > MaxPID {
			t.Fatalf("Parse(%q) = %q, %d", value, tool, pid)
		}
		if !strings.HasPrefix(value, tool+":") {
			t.Fatalf("Parse(%q): tool %q is not the part before the last ':'", value, tool)
		}
		t2, p2, err := Parse(Format(tool, pid))
		if err != nil || t2 != tool || p2 != pid {
			t.Fatalf("Parse(Format(%q, %d)) = %q, %d, %v", tool, pid, t2, p2, err)
		}
	})
}
