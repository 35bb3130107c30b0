//go:build linux || darwin

package containment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongOrders: orders longer than a pipe holds (written once the copy
// runs) reach it whole, and the command's environment reaches the
// command unchanged, CONTAIN_REPORT included, which the copy does not
// take: no report is written there.
func TestLongOrders(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report")
	g, err := NewGroup(Options{Originator: "LONG"})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", `printf '%s %s' "$#" "$CONTAIN_REPORT" > "$0"`, filepath.Join(dir, "out")}
	for range 100 {
		args = append(args, strings.Repeat("x", 1000))
	}
	out := args[2]
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "CONTAIN_REPORT="+report)
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if want := fmt.Sprintf("100 %s", report); err != nil || string(b) != want {
		t.Errorf("the command saw %q (%v), want %q", b, err, want)
	}
	if _, err := os.Stat(report); err == nil {
		t.Errorf("the copy wrote a report to the command's CONTAIN_REPORT")
	}
}
