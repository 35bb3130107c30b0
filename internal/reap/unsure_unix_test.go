//go:build linux || darwin

package reap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRegistryTouch: Touch moves the registry's time to now, at most every
// touchEvery, and reap reads it back: the bound on what contain could
// still have seen (FindUnsure).
func TestRegistryTouch(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	r, err := OpenRegistry(fmt.Sprintf("CONTAIN:%d", os.Getpid()), os.Getpid(), 42)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Remove()
	path := filepath.Join(xdg, "contain", r.name)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	r.Touch()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(st.ModTime()); d < 0 || d > 5*time.Second {
		t.Errorf("after Touch the registry's time is %v ago", d)
	}
	// At once again: not written (at most every touchEvery).
	os.Chtimes(path, old, old)
	r.Touch()
	if st, _ := os.Stat(path); !st.ModTime().Equal(old.Truncate(time.Microsecond)) && time.Since(st.ModTime()) < time.Minute {
		t.Errorf("a second Touch within %v wrote the time again", touchEvery)
	}
	regs, _ := readRegistries()
	for _, reg := range regs {
		if reg.name == r.name && time.Since(reg.touched) < 59*time.Minute {
			t.Errorf("read back touched %v, want the hour-old time", reg.touched)
		}
	}
}
