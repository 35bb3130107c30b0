//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReportPathNotWritable: a --report path that contain could not write
// at the end is refused before COMMAND runs (125, one line), as a missing
// directory is, instead of losing the report after the run: a directory
// the user may not write in, and an existing file the user may not write.
// The check creates and truncates nothing. As nobody, in directories that
// nobody cannot write (root may write anywhere).
func TestReportPathNotWritable(t *testing.T) {
	t.Parallel()
	requireRoot(t, "to run contain as nobody, who cannot write where root can")
	dir := sharedDir(t) // nobody may write here: where COMMAND leaves its marker
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil { // root's, not writable by nobody
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.json") // root's, 0644: nobody may not write it
	if err := os.WriteFile(theirs, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path string }{
		{"a directory nobody cannot write in", filepath.Join(locked, "r.json")},
		{"a file nobody cannot write", theirs},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(dir, "ran")
			os.Remove(marker)
			res := run(t, runOpts{asNobody: true}, "run", "--report", c.path, "--", "touch", marker)
			wantCode(t, res, 125)
			wantOneErrorLine(t, res.stderr, "contain: run: --report: ")
			if _, err := os.Stat(marker); err == nil {
				t.Error("COMMAND ran although the report could not be written")
			}
		})
	}
	if b, err := os.ReadFile(theirs); err != nil || string(b) != "kept\n" {
		t.Errorf("the existing file was changed: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(locked); len(ents) != 0 {
		t.Errorf("something was made in the directory: %v", ents)
	}

	// Where nobody may write, a new file and an existing one of nobody's
	// are accepted, and the report is written; a file that the check
	// looked at is not truncated before COMMAND runs.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	fresh := filepath.Join(open, "r.json")
	res := run(t, runOpts{asNobody: true}, "run", "--report", fresh, "--", "sh", "-c", "test ! -e "+fresh)
	wantCode(t, res, 0)
	if st, err := os.Stat(fresh); err != nil || st.Size() == 0 {
		t.Errorf("no report in %s: %v", fresh, err)
	}
	res = run(t, runOpts{asNobody: true}, "run", "--report", fresh, "--", "sh", "-c", "test -s "+fresh)
	wantCode(t, res, 0)
}
