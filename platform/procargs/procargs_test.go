package procargs

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

// buffer builds a KERN_PROCARGS2 buffer: argc, the path, pad NULs, then
// the strings given, each NUL-terminated, then tail as it is.
func buffer(argc int32, path string, pad int, strs []string, tail string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	b = append(b, path...)
	b = append(b, 0)
	b = append(b, make([]byte, pad)...)
	for _, s := range strs {
		b = append(b, s...)
		b = append(b, 0)
	}
	return append(b, tail...)
}

func TestParse(t *testing.T) {
	tag := "RUNNING_PROCESS_ORIGINATOR=CLUD:4242"
	apple := "executable_path=/bin/sleep\x00ptr_munge=\x00main_stack=\x00"
	for _, c := range []struct {
		name string
		in   []byte
		want Args
		err  error
	}{
		{"a whole buffer, apple strings not taken for environment",
			buffer(2, "/bin/sleep", 7, []string{"sleep", "300", "HOME=/Users/a", tag, ""}, apple),
			Args{Exec: "/bin/sleep", Argv: []string{"sleep", "300"}, Env: []string{"HOME=/Users/a", tag}}, nil},
		{"no padding", buffer(1, "/x", 0, []string{"x", "A=1", ""}, ""),
			Args{Exec: "/x", Argv: []string{"x"}, Env: []string{"A=1"}}, nil},
		{"an empty argument after the first", buffer(3, "/x", 3, []string{"x", "", "y", "A=1", ""}, apple),
			Args{Exec: "/x", Argv: []string{"x", "", "y"}, Env: []string{"A=1"}}, nil},
		{"hidden environment: the buffer ends after argv", buffer(2, "/bin/sleep", 5, []string{"sleep", "1"}, ""),
			Args{Exec: "/bin/sleep", Argv: []string{"sleep", "1"}, EnvHidden: true}, nil},
		{"an empty environment", buffer(1, "/x", 1, []string{"x", ""}, apple),
			Args{Exec: "/x", Argv: []string{"x"}}, nil},
		{"environment cut short: the cut entry is dropped, never guessed",
			buffer(1, "/x", 1, []string{"x", "A=1"}, "RUNNING_PROCESS_ORIGINATOR=CL"),
			Args{Exec: "/x", Argv: []string{"x"}, Env: []string{"A=1"}}, nil},
		{"argc larger than the strings there are", buffer(5, "/x", 1, []string{"x", "y"}, ""),
			Args{Exec: "/x", Argv: []string{"x", "y"}}, ErrTruncated},
		{"cut inside the path", []byte("\x01\x00\x00\x00/bin/sl"), Args{}, ErrTruncated},
		{"argc 0", buffer(0, "/x", 2, []string{"A=1", ""}, ""),
			Args{Exec: "/x", Argv: []string{}, Env: []string{"A=1"}}, nil},
	} {
		got, err := Parse(c.in)
		if !errors.Is(err, c.err) || got.Exec != c.want.Exec || !slices.Equal(got.Argv, c.want.Argv) ||
			!slices.Equal(got.Env, c.want.Env) || got.EnvHidden != c.want.EnvHidden {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
	for _, bad := range [][]byte{nil, {1, 0}, binary.LittleEndian.AppendUint32(nil, 0xffffffff), binary.LittleEndian.AppendUint32(nil, MaxArgs+1)} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

// TestParseShifted: a process that executes another program while its
// buffer is read can leave bytes of another layout; whatever they are, the
// decoder returns an error or strings it found whole, and never a tag it
// made up from pieces.
func TestParseShifted(t *testing.T) {
	whole := buffer(2, "/bin/sh", 4, []string{"sh", "-c", "RUNNING_PROCESS_ORIGINATOR=A:1", ""}, "")
	for i := range len(whole) {
		a, err := Parse(whole[i:])
		if err != nil {
			continue
		}
		for _, kv := range a.Env {
			if v, ok := strings.CutPrefix(kv, "RUNNING_PROCESS_ORIGINATOR="); ok && v != "A:1" {
				t.Errorf("offset %d: a made-up tag %q", i, v)
			}
		}
	}
}

func TestGetenv(t *testing.T) {
	env := []string{"running_process_originator=X:1", "RUNNING_PROCESS_ORIGINATOR=A:2", "RUNNING_PROCESS_ORIGINATOR=B:3", "NOEQUALS"}
	if v, ok := Getenv(env, "RUNNING_PROCESS_ORIGINATOR"); !ok || v != "A:2" {
		t.Fatalf("Getenv = %q, %v", v, ok)
	}
	if _, ok := Getenv(env, "NOEQUALS"); ok {
		t.Fatal("an entry without = is no variable")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(buffer(2, "/bin/sleep", 7, []string{"sleep", "300", "A=1", ""}, "executable_path=/bin/sleep\x00"))
	f.Add(buffer(1, "/x", 0, []string{"x"}, ""))
	f.Add(buffer(1<<20, "/x", 0, []string{"x"}, ""))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Parse(b)
		if err != nil && !errors.Is(err, ErrTruncated) && len(a.Argv) != 0 {
			t.Fatalf("an error other than truncation with arguments: %v", err)
		}
		n := 0
		for _, s := range append(append([]string{a.Exec}, a.Argv...), a.Env...) {
			n += len(s) + 1
		}
		if err == nil && n+4 > len(b) {
			t.Fatalf("decoded %d bytes out of %d", n+4, len(b))
		}
		for _, kv := range a.Env {
			if kv == "" || strings.ContainsRune(kv, 0) {
				t.Fatalf("environment entry %q", kv)
			}
		}
	})
}
