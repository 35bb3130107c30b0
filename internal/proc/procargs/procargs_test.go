package procargs

import (
	"bytes"
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

// xnu builds a buffer as XNU writes it: argc, the exec path, NULs to an
// 8-byte boundary (counted after argc), argv, env, NULs to a boundary
// (none when env ends on one), the apple strings, NULs to a boundary.
func xnu(path string, argv, env, apple []string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(argv)))
	pad := func() {
		for (len(b)-4)%8 != 0 {
			b = append(b, 0)
		}
	}
	b = append(b, path+"\x00"...)
	pad()
	for _, s := range append(slices.Clone(argv), env...) {
		b = append(b, s+"\x00"...)
	}
	pad()
	for _, s := range apple {
		b = append(b, s+"\x00"...)
	}
	pad()
	return b
}

var apple = []string{"pfz=0x7ffc0000", "stack_guard=0x1b2c3d4e00", "malloc_entropy=0x1,0x2", "ptr_munge=0x5e6f",
	"main_stack=0x16f,0x80,0x16e,0x400", "executable_file=0x1a,0x2b", "th_port=0x103"}

// Apple's strings follow the environment with no NUL between them when
// the environment ends on an 8-byte boundary: they are not taken for
// environment, whichever way it ends.
func TestParseAppleStrings(t *testing.T) {
	tag := "RUNNING_PROCESS_ORIGINATOR=CLUD:4242424" // 39 bytes and a NUL: 40
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		// After "sh\0", 3 bytes: "A=1x\0" ends on the boundary, "A=1\0" not.
		{"ends on a boundary", []string{"A=1x"}, []string{"A=1x"}},
		{"padded", []string{"A=1"}, []string{"A=1"}},
		{"the tag last, on a boundary", []string{"A=1x", tag}, []string{"A=1x", tag}},
		{"the tag first, on a boundary", []string{tag, "A=1x"}, []string{tag, "A=1x"}},
		{"an empty environment", []string{"ABCD"}[:0], nil},
		// Variables named as apple strings, with others after them, are
		// environment; so is one that ends a padded environment.
		{"apple-named variables", []string{"pfz=mine", "A=1x", "ptr_munge=x"}, []string{"pfz=mine", "A=1x", "ptr_munge=x"}},
		{"an apple-named variable last, padded", []string{"A=1x", "pfz=1234567"}, []string{"A=1x", "pfz=1234567"}},
	} {
		b := xnu("/bin/sh", []string{"sh"}, c.env, apple)
		a, err := Parse(b)
		if err != nil || !slices.Equal(a.Env, c.want) || !slices.Equal(a.Argv, []string{"sh"}) || !a.Plausible("sh") {
			t.Errorf("%s: env %q, %v; want %q", c.name, a.Env, err, c.want)
		}
	}
	// The case itself: with no padding, apple strings come right after
	// the environment.
	if b := xnu("/bin/sh", []string{"sh"}, []string{"A=1x"}, apple); !bytes.Contains(b, []byte("A=1x\x00pfz=")) {
		t.Fatalf("no case: %q", b)
	}
	// The limits: an apple string this decoder does not know, after those
	// it knows, leaves them all in Env (harmless to the tag); variables
	// that end an environment on a boundary, all named as apple strings,
	// are taken for apple strings.
	unknown := append(slices.Clone(apple), "future_key=1")
	if a, _ := Parse(xnu("/bin/sh", []string{"sh"}, []string{"A=1x"}, unknown)); !slices.Equal(a.Env, append([]string{"A=1x"}, unknown...)) {
		t.Errorf("an unknown apple string: env %q", a.Env)
	}
	if a, _ := Parse(xnu("/bin/sh", []string{"sh"}, []string{"A=1x", "pfz=123"}, apple)); !slices.Equal(a.Env, []string{"A=1x"}) {
		t.Errorf("apple-named variables last, on a boundary: env %q", a.Env)
	}
}

// Plausible: argv on an 8-byte boundary, and the executable's name is
// p_comm (or begins with it when p_comm holds 16 bytes, all XNU keeps).
func TestPlausible(t *testing.T) {
	for _, c := range []struct {
		exec, comm string
		at         int
		want       bool
	}{
		{"/bin/sh", "sh", 8, true},
		{"/bin/sh", "", 16, true},
		{"/bin/sh", "sh", 5, false},
		{"/bin/sh", "", 3, false},
		{"/usr/bin/python3", "python3.12", 24, false},
		{"/Applications/Some.app/Contents/MacOS/SomeVeryLongNameIndeed", "SomeVeryLongName", 64, true},
		{"/x/SomeVeryLongNameIndeed", "SomeVeryLong", 32, false},
		{"sh", "sh", 8, true},
	} {
		if got := (Args{Exec: c.exec, ArgvAt: c.at}).Plausible(c.comm); got != c.want {
			t.Errorf("Plausible(%q, comm %q, argv at %d) = %v", c.exec, c.comm, c.at, got)
		}
	}
	if a, err := Parse(xnu("/bin/sleep", []string{"sleep", "1"}, []string{"A=1"}, apple)); err != nil || a.ArgvAt != 16 || !a.Plausible("sleep") {
		t.Errorf("%+v, %v", a, err)
	}
}

// TestParseTailNotPlausible: the tail of an area from any 8-byte boundary
// on (what a read while the process executes another program can give)
// fails to decode, or is not Plausible for the process's name, or, where
// it cut only into the exec path, holds the whole of argv and the
// environment: never a tag hidden or made up.
func TestParseTailNotPlausible(t *testing.T) {
	argv := []string{"make", "-j8", "CC=clang", "all", "install"}
	env := []string{"HOME=/Users/a", "RUNNING_PROCESS_ORIGINATOR=CI:1", "TERM=xterm"}
	b := xnu("/usr/bin/make", argv, env, apple)
	for cut := 12; cut < len(b); cut += 8 {
		tail := append(binary.LittleEndian.AppendUint32(nil, uint32(len(argv))), b[cut:]...)
		a, err := Parse(tail)
		if err == nil && a.Plausible("make") && (!slices.Equal(a.Argv, argv) || !slices.Equal(a.Env, env)) {
			t.Errorf("cut at %d: plausible: %+v", cut-4, a)
		}
	}
}
