package report

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummary(t *testing.T) {
	r := New("contain")
	r.Ending.ExitCode = Ptr(3)
	r.Ending.TimedOut = Ptr(true)
	r.WallSeconds = 1.5
	r.Resources.CPUUserSeconds, r.Resources.CPUSystemSeconds = Seconds(250*time.Millisecond), Seconds(time.Millisecond)
	r.Resources.MaxProcessRSSBytes = Ptr(uint64(100 << 20))
	r.Resources.PeakProcesses = Ptr(4)
	r.Leftovers = []Leftover{{EndedBy: "SIGTERM"}, {EndedBy: "SIGKILL"}, {EndedBy: "SIGTERM"}, {EndedBy: "still running"}}
	want := "done: exit 3 (timed out), 1.500s wall, CPU 0.250s user 0.001s system, largest process 100 MiB, peak 4 processes, 4 leftovers (2 ended by SIGTERM, 1 ended by SIGKILL, 1 still running)"
	if got := Summary(r); got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
	r.Leftovers = []Leftover{{EndedBy: "SIGTERM, then exited 0"}}
	if got := Summary(r); !strings.HasSuffix(got, ", 1 leftover (1 exited 0 after SIGTERM)") {
		t.Errorf("Summary of one leftover: %s", got)
	}
	r.Leftovers = []Leftover{{EndedBy: "SIGTERM, then ended, status unknown"}, {EndedBy: "ended, status unknown"}}
	if got := Summary(r); !strings.HasSuffix(got, ", 2 leftovers (1 ended after SIGTERM (status unknown), 1 ended (status unknown))") {
		t.Errorf("Summary of unknown statuses: %s", got)
	}
	// What the timeout ended with COMMAND is said by name; the close's
	// are the leftovers, said already, and one still running is not.
	r.Leftovers = nil
	r.EndedByContain = []Ended{{Comm: "sh", Phase: PhaseTimeout, EndedBy: "SIGTERM"}, {Comm: "sleep", Phase: PhaseTimeout, EndedBy: "SIGTERM"},
		{Comm: "sleep", Phase: PhaseTimeout, EndedBy: "SIGKILL"}, {Comm: "sleep", Phase: PhaseClose, EndedBy: "SIGTERM"},
		{Comm: "dd", Phase: PhaseTimeout, EndedBy: "still running"}, {Comm: "make", Phase: PhaseStop, EndedBy: "SIGINT"}}
	if got := Summary(r); !strings.HasSuffix(got, ", no leftovers, the timeout ended 3 processes (sh, 2 sleep), the request to stop ended 1 process (make)") {
		t.Errorf("Summary of what contain ended: %s", got)
	}
	if got := Summary(New("guard")); !strings.HasPrefix(got, "done: COMMAND's end unknown,") || !strings.HasSuffix(got, ", no leftovers") {
		t.Errorf("Summary of an empty report: %s", got)
	}
}

func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for path, ok := range map[string]bool{
		"-": true, filepath.Join(dir, "r.json"): true, file: true, "r.json": true,
		"": false, filepath.Join(dir, "no", "r.json"): false, filepath.Join(file, "r.json"): false, dir: false,
	} {
		if err := CheckPath(path); (err == nil) != ok {
			t.Errorf("CheckPath(%q) = %v, want ok %v", path, err, ok)
		}
	}
}

// Write keeps a command line's characters as they are, and the times in
// RFC 3339 with sub-second precision, read back the same.
func TestWriteRoundTrip(t *testing.T) {
	r := New("contain")
	r.Command = []string{"sh", "-c", "a && b < c"}
	at := time.Date(2026, 11, 22, 15, 4, 5, 123456789, time.UTC)
	r.Started = Time{at}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := Write(path, r, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"a && b < c"`) || !strings.Contains(string(b), `"2026-11-22T15:04:05.123456789Z"`) {
		t.Errorf("report:\n%s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || !back.Started.Equal(at) || back.Version != Version {
		t.Errorf("read back: %v %+v", err, back)
	}
	var out strings.Builder
	if err := Write("-", r, &out); err != nil || !strings.HasPrefix(out.String(), "{") {
		t.Errorf("to stderr: %v %q", err, out.String())
	}
}

// TestCheckPathAsksTheKernel: an existing file is checked for writing, a
// new one for creating in its directory; a refusal is an error that names
// the path; and the check creates and truncates nothing. Without root the
// kernel's own answer for a directory and a file of mode 0555 and 0444 is
// checked too (root may write there: tests/report_path_test.go runs
// contain as nobody; Windows has no access(2)).
func TestCheckPathAsksTheKernel(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "old.json")
	os.WriteFile(file, []byte("kept"), 0o644)
	fresh := filepath.Join(dir, "new.json")

	realWrite, realCreate := canWrite, canCreateIn
	defer func() { canWrite, canCreateIn = realWrite, realCreate }()
	var asked []string
	no := errors.New("permission denied")
	canWrite = func(p string, _ fs.FileInfo) error { asked = append(asked, "write "+p); return no }
	canCreateIn = func(d string) error { asked = append(asked, "create in "+d); return no }
	if err := CheckPath(file); err == nil || !strings.Contains(err.Error(), "cannot write "+file) {
		t.Errorf("CheckPath of a file that cannot be written: %v", err)
	}
	if err := CheckPath(fresh); err == nil || !strings.Contains(err.Error(), "cannot create new.json in "+dir) {
		t.Errorf("CheckPath of a file that cannot be created: %v", err)
	}
	if want := []string{"write " + file, "create in " + dir}; !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	canWrite, canCreateIn = realWrite, realCreate

	if err := CheckPath(file); err != nil {
		t.Errorf("CheckPath(%s): %v", file, err)
	}
	if err := CheckPath(fresh); err != nil {
		t.Errorf("CheckPath(%s): %v", fresh, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "kept" {
		t.Errorf("the existing file now holds %q", b)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("the check created the file")
	}

	if os.Geteuid() == 0 || runtime.GOOS == "windows" { // Windows: no access(2)
		return
	}
	locked := filepath.Join(dir, "locked")
	os.Mkdir(locked, 0o555)
	readOnly := filepath.Join(dir, "ro.json")
	os.WriteFile(readOnly, nil, 0o444)
	for _, p := range []string{filepath.Join(locked, "r.json"), readOnly} {
		if err := CheckPath(p); err == nil {
			t.Errorf("CheckPath(%s) accepted a path it cannot write", p)
		}
	}
}
