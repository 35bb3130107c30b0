package testtool

import (
	"debug/elf"
	"os/exec"
	"slices"
	"testing"
)

// StaticBusybox is a busybox that needs no dynamic loader (Debian's
// busybox-static), for a root or an initramfs that has none: busybox on
// PATH, or else /bin/busybox or /usr/bin/busybox. Without one the test
// ends as Missing says.
func StaticBusybox(t testing.TB) string {
	t.Helper()
	var candidates []string
	if p, err := exec.LookPath("busybox"); err == nil {
		candidates = append(candidates, p)
	}
	dynamic := ""
	for _, p := range append(candidates, "/bin/busybox", "/usr/bin/busybox") {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if static {
			return p
		}
		if dynamic == "" {
			dynamic = p
		}
	}
	if dynamic != "" {
		Missing(t, dynamic+" is linked dynamically: a static busybox is needed (Debian package busybox-static)")
	} else {
		Missing(t, "busybox is not installed (Debian package busybox-static)")
	}
	return ""
}
