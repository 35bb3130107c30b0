package shim

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestBrief: the brief read as the keeper reads it (pointers into it,
// mapped at BriefBase): COMMAND's path, argv and envp, /bin/sh's path and
// argv for a script without #! (none when COMMAND is /bin/sh), its
// Pdeathsig and the terminal flag; the orders and contain's PID read back
// by contain __shim keeper.
func TestBrief(t *testing.T) {
	ne := binary.NativeEndian
	for _, o := range []Orders{
		{Path: "/usr/bin/printf", Argv: []string{"printf", "a b", "", "é"}, Env: []string{"A=1", "B="}, Pdeathsig: 15, Foreground: true},
		{Path: "/bin/sh", Argv: []string{"/bin/sh", "-c", "exit 3"}, Env: nil, Pdeathsig: 9},
	} {
		orders := []byte(`{"tag":"CONTAIN:1"}`)
		b := Brief(o, orders, 4321)
		ptr := func(at uint64) uint64 {
			if at < BriefBase || at-BriefBase+8 > uint64(len(b)) {
				t.Fatalf("pointer %#x outside the brief", at)
			}
			return ne.Uint64(b[at-BriefBase:])
		}
		str := func(p uint64) string {
			i := p - BriefBase
			n := bytes.IndexByte(b[i:], 0)
			if n < 0 {
				t.Fatalf("string at %#x has no NUL", p)
			}
			return string(b[i : i+uint64(n)])
		}
		list := func(p uint64) []string {
			out := []string{}
			for ; ptr(p) != 0; p += 8 {
				out = append(out, str(ptr(p)))
			}
			return out
		}
		h := func(off int) uint64 { return ne.Uint64(b[off:]) }
		if got := str(h(0)); got != o.Path {
			t.Errorf("path %q, want %q", got, o.Path)
		}
		if got := list(h(8)); !reflect.DeepEqual(got, o.Argv) {
			t.Errorf("argv %q, want %q", got, o.Argv)
		}
		if got, want := list(h(16)), append([]string{}, o.Env...); !reflect.DeepEqual(got, want) {
			t.Errorf("envp %q, want %q", got, want)
		}
		if o.Argv[0] == "/bin/sh" {
			if h(24) != 0 || h(32) != 0 {
				t.Errorf("a shell for /bin/sh itself")
			}
		} else {
			if got := str(h(24)); got != "/bin/sh" {
				t.Errorf("shell %q", got)
			}
			if got, want := list(h(32)), append([]string{"/bin/sh", o.Path}, o.Argv[1:]...); !reflect.DeepEqual(got, want) {
				t.Errorf("shell argv %q, want %q", got, want)
			}
		}
		if got := ne.Uint32(b[briefPdeathsig:]); got != uint32(o.Pdeathsig) {
			t.Errorf("pdeathsig %d", got)
		}
		if got := ne.Uint32(b[briefFlags:]) == briefForeground; got != o.Foreground {
			t.Errorf("foreground %v", got)
		}
		if ne.Uint32(b[48:]) != 0 || ne.Uint64(b[56:]) != 0 {
			t.Errorf("the keeper's words are not 0")
		}
		f := filepath.Join(t.TempDir(), "brief")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		got, pid, err := readBrief(fh)
		fh.Close()
		if err != nil || !bytes.Equal(got, orders) || pid != 4321 {
			t.Errorf("readBrief: %q %d %v", got, pid, err)
		}
	}
}
