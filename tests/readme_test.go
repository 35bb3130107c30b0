//go:build linux

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's examples are the binary's own output: these tests run them
// and compare what they print with what the README shows, every number
// (PIDs, times, sizes: 5, 4.9, 0.015) read as "N". A line "..." in the README stands for
// any lines.

// readme is README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fences are the contents of the ``` blocks of text.
func fences(text string) []string {
	var out []string
	parts := strings.Split(text, "\n```")
	for i := 1; i+1 < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n") // after the info string
		out = append(out, body)
	}
	return out
}

var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// sameOutput compares got with the README's want, numbers as N and "..."
// for any lines. Lines of leftovers (signalled, reaped), which contain's
// closing loop and its reaper write as each gets there, compare in any
// order within their run of lines.
//
// contain's own lines (on its stderr) and COMMAND's (on its stdout) are
// compared each in their order, not with each other: a terminal shows
// them as each process gets to write, and COMMAND may print before contain
// has said it started it.
func sameOutput(want, got string) bool {
	w := strings.Split(strings.TrimRight(numbers.ReplaceAllString(want, "N"), "\n"), "\n")
	g := strings.Split(strings.TrimRight(numbers.ReplaceAllString(got, "N"), "\n"), "\n")
	for _, own := range []bool{true, false} {
		if !sameLines(leftoverRunsSorted(stream(w, own)), leftoverRunsSorted(stream(g, own))) {
			return false
		}
	}
	return true
}

// stream is the lines of contain (own) or of the rest; "..." is in both.
func stream(lines []string, own bool) []string {
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "..." || strings.HasPrefix(l, "contain: ") == own {
			out = append(out, l)
		}
	}
	return out
}

// sameLines compares lines, "..." in w for any lines of g.
func sameLines(w, g []string) bool {
	var match func(w, g []string) bool
	match = func(w, g []string) bool {
		if len(w) == 0 {
			return len(g) == 0
		}
		if strings.TrimSpace(w[0]) == "..." {
			for i := 0; i <= len(g); i++ {
				if match(w[1:], g[i:]) {
					return true
				}
			}
			return false
		}
		return len(g) > 0 && w[0] == g[0] && match(w[1:], g[1:])
	}
	return match(w, g)
}

// leftoverRunsSorted sorts each run of consecutive lines about leftovers.
func leftoverRunsSorted(lines []string) []string {
	leftover := func(l string) bool {
		return strings.HasPrefix(l, "contain: sending SIGTERM to leftover ") || strings.HasPrefix(l, "contain: reaped adopted process ")
	}
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && leftover(lines[j]) {
			j++
		}
		if j > i {
			slices.Sort(lines[i:j])
			i = j
		} else {
			i++
		}
	}
	return lines
}

// readmeShell runs script with sh in dir, contain on PATH as "contain",
// and returns its output, stdout and stderr together as a terminal shows
// them.
func readmeShell(t *testing.T, dir, script string) string {
	t.Helper()
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "contain")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestReadmeFirstCommand: the build-and-run line near the top of the README
// prints what the README says it prints.
func TestReadmeFirstCommand(t *testing.T) {
	t.Parallel()
	requireRoot(t, "the README shows root's output (a cgroup)")
	text := readme(t)
	var command, printed string
	for i, f := range fences(text) {
		if strings.HasPrefix(f, "go build -o contain . && ") {
			command = strings.TrimSpace(f)
			printed = fences(text)[i+1]
			break
		}
	}
	if command == "" {
		t.Fatal("README has no block that starts with go build -o contain . &&")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := strings.Replace(command, "go build -o contain .", "go build -C "+root+" -o "+filepath.Join(dir, "contain")+" .", 1)
	if got := readmeShell(t, dir, script); !sameOutput(printed, got) {
		t.Errorf("README's first command printed:\n%s\nthe README says:\n%s", got, printed)
	}
}

// tourSkips are the tour's commands this test does not run, and why: each
// has tests of its own.
var tourSkips = map[string]string{
	"redis-server":  "needs redis-server (tests/daemons_test.go)",
	"kill -9":       "a crash of contain, with a background job (tests/crash_test.go)",
	"CLUD":          "another tool's crashed session (tests/reap_test.go)",
	"contain stop":  "needs a session of another shell (tests/stop_wait_test.go)",
	"go test ./...": "runs this project's own tests",
	"make":          "needs a Makefile",
}

// TestReadmeTour: every block of the tour that can run here runs, and
// prints what the README shows.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	requireRoot(t, "the README shows root's output (a cgroup)")
	text := readme(t)
	start := strings.Index(text, "\n## A 60-second tour\n")
	if start < 0 {
		t.Fatal("README has no tour")
	}
	tour := text[start+1:]
	tour = tour[:strings.Index(tour, "\n## ")]
	ran := 0
	for _, block := range fences(tour) {
		if !strings.HasPrefix(block, "$ ") {
			continue
		}
		skip := ""
		for what, why := range tourSkips {
			if strings.Contains(block, what) {
				skip = why
			}
		}
		if skip != "" {
			t.Logf("not run: %s", skip)
			continue
		}
		var script, want []string
		for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
			if c, ok := strings.CutPrefix(l, "$ "); ok {
				script = append(script, c)
			} else {
				want = append(want, l)
			}
		}
		got := readmeShell(t, t.TempDir(), strings.Join(script, "\n"))
		if !sameOutput(strings.Join(want, "\n"), got) {
			t.Errorf("the tour's\n%s\nprinted:\n%s\nthe README says:\n%s", strings.Join(script, "\n"), got, strings.Join(want, "\n"))
		}
		ran++
	}
	if ran < 3 {
		t.Errorf("ran %d blocks of the tour, want at least 3", ran)
	}
}
