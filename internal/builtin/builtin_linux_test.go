package builtin

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestImage: Image makes a static executable for this machine whose
// entry is the code's first byte, followed by its data, with a stack
// that is not executable.
func TestImage(t *testing.T) {
	if !Available() {
		t.Skipf("no built-in programs for %s", runtime.GOARCH)
	}
	for _, code := range [][]byte{Waiter, Keeper} {
		img := Image(code, []byte{15, 2, 0})
		f, err := elf.NewFile(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || f.Class != elf.ELFCLASS64 {
			t.Errorf("machine %v, type %v, class %v", f.Machine, f.Type, f.Class)
		}
		var load *elf.Prog
		for _, p := range f.Progs {
			switch p.Type {
			case elf.PT_LOAD:
				load = p
			case elf.PT_GNU_STACK:
				if p.Flags&elf.PF_X != 0 {
					t.Errorf("an executable stack: %v", p.Flags)
				}
			}
		}
		if load == nil || load.Flags != elf.PF_R|elf.PF_X || load.Filesz != uint64(len(img)) {
			t.Fatalf("the segment: %+v", load)
		}
		at := f.Entry - load.Vaddr
		if !bytes.Equal(img[at:at+uint64(len(code))], code) || !bytes.Equal(img[len(img)-3:], []byte{15, 2, 0}) {
			t.Errorf("the entry does not lead to the code and its data after it")
		}
	}
}

// TestCodeIsTheSource: code_linux_amd64.go is what testdata's assembly
// assembles to (binutils' as and objcopy): run sh testdata/mkcode.sh
// after changing it.
func TestCodeIsTheSource(t *testing.T) {
	as := testtool.Need(t, "as", "binutils")
	objcopy := testtool.Need(t, "objcopy", "binutils")
	dir := t.TempDir()
	for name, code := range map[string][]byte{"waiter": Waiter, "keeper": Keeper} {
		if runtime.GOARCH != "amd64" {
			t.Skipf("the assembly is amd64's")
		}
		obj, bin := filepath.Join(dir, name+".o"), filepath.Join(dir, name+".bin")
		for _, c := range [][]string{
			{as, "--64", "-o", obj, "testdata/" + name + "_amd64.S"},
			{objcopy, "-O", "binary", "-j", ".text", obj, bin},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%q: %v\n%s", c, err, out)
			}
		}
		want, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(code, want) {
			t.Errorf("the %s in code_linux_amd64.go is not testdata/%s_amd64.S: run sh testdata/mkcode.sh", name, name)
		}
	}
}
