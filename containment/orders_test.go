package containment

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOrders: the copy reads back what the host framed, and refuses
// anything else: another version, a truncated frame, orders that are not
// contain run's.
func TestOrders(t *testing.T) {
	args := []string{"run", "--originator", "T", "--report", "/tmp/a b", "--", "sh", "-c", "echo 'x\ny'", ""}
	got, err := decodeOrders(bytes.NewReader(encodeOrders(args)))
	if err != nil || !slices.Equal(got, args) {
		t.Fatalf("decoded %q, %v; want %q", got, err, args)
	}
	good := encodeOrders(args)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-3],
		"version":   append(append([]byte{0, 0, 0, 18}, "contain-orders-0\x00"...), "run\x00"...),
		"not run":   encodeOrders([]string{"ps", "--", "x"}),
		"too long":  {0xff, 0xff, 0xff, 0xff},
		"unended":   append([]byte{0, 0, 0, 24}, "contain-orders-1\x00run\x00--"...),
	} {
		if got, err := decodeOrders(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: decoded %q", name, got)
		}
	}
}

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
