//go:build linux

package tests

import (
	"debug/elf"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunSkipsCLIInit: contain run and the crash guard run from
// internal/runcmd's init function, before urfave/cli and the packages only
// it needs are initialised; in this binary, built as go install builds it,
// those include a markdown parser. GODEBUG=inittrace=1 lists the packages
// that were initialised.
func TestRunSkipsCLIInit(t *testing.T) {
	t.Parallel()
	skipped := []string{"github.com/urfave/cli/v2", "github.com/russross/blackfriday/v2", "text/template", "regexp", "github.com/godbus/dbus/v5", "net"}
	inits := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := inits("ps"); !strings.Contains(out, "init github.com/urfave/cli/v2 @") {
		t.Fatalf("contain ps: no init trace of urfave/cli:\n%s", out)
	}
	for _, args := range [][]string{{"run", "--", "true"}, {"run", "-t", "5", "-o", "X", "true"}, {"__guard"}} {
		out := inits(args...)
		if !strings.Contains(out, "init os @") {
			t.Fatalf("contain %q: no init trace:\n%s", args, out)
		}
		for _, pkg := range skipped {
			if strings.Contains(out, "init "+pkg+" @") {
				t.Errorf("contain %q initialised %s:\n%s", args, pkg, out)
			}
		}
	}
}

// TestStaticBinary: contain as go build makes it, where a C compiler makes
// cgo available, is still statically linked: nothing it imports needs cgo
// (net and os/user would, and a dynamically linked contain pays the loader
// and libc's thread start on every run: the godbus client did that, ratio
// 1.75 to 2.10 as root; bench/README.md).
func TestStaticBinary(t *testing.T) {
	t.Parallel()
	if out, _ := exec.Command("go", "env", "CGO_ENABLED").Output(); strings.TrimSpace(string(out)) != "1" {
		t.Skip("cgo is off here (no C compiler): every Go build is static, the check would prove nothing")
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			libs, _ := f.ImportedLibraries()
			t.Errorf("%s is dynamically linked (%v): something it imports needs cgo", bin, libs)
		}
	}
}
