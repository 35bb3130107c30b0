//go:build linux

package tests

// The GitHub Action (action.yml, action/*.js) run as the runner runs it:
// node on its main and post scripts, with the INPUT_ variables and the
// GITHUB_ files a runner gives (GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT,
// GITHUB_STATE, GITHUB_STEP_SUMMARY; the post step gets the state as
// STATE_ variables), against a fake release served here: archives made
// of the contain under test, as goreleaser.yaml makes them, and their
// checksums.txt.

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// fakeRelease serves files at their paths under /contain-cli/contain/releases
// (its URL), and /latest as GitHub does: a redirect to the newest tag.
type fakeRelease struct {
	URL      string
	files    map[string][]byte // by path under the releases' URL
	latest   string            // the tag /latest redirects to
	requests atomic.Int64
}

func newFakeRelease(t *testing.T) *fakeRelease {
	t.Helper()
	r := &fakeRelease{files: map[string][]byte{}}
	const base = "/contain-cli/contain/releases"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		p, ok := strings.CutPrefix(req.URL.Path, base)
		switch {
		case ok && p == "/latest" && r.latest != "":
			// Relative, as a server may answer: the action resolves it.
			http.Redirect(w, req, base+"/tag/"+r.latest, http.StatusFound)
		case ok && r.files[p] != nil:
			// Through a redirect, as GitHub sends a download elsewhere.
			if req.URL.Query().Get("served") == "" {
				http.Redirect(w, req, req.URL.Path+"?served=1", http.StatusFound)
				return
			}
			w.Write(r.files[p])
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + base
	return r
}

// add serves asset as release version's, with a checksums.txt that lists
// each asset added (sums overrides a line: the checksum to give for it).
func (r *fakeRelease) add(version, asset string, data []byte, sums map[string]string) {
	dir := "/download/v" + version + "/"
	r.files[dir+asset] = data
	sum := sha256.Sum256(data)
	line := hex.EncodeToString(sum[:])
	if s, ok := sums[asset]; ok {
		line = s
	}
	if line != "" {
		r.files[dir+"checksums.txt"] = append(r.files[dir+"checksums.txt"], fmt.Sprintf("%s  %s\n", line, asset)...)
	} else if r.files[dir+"checksums.txt"] == nil {
		r.files[dir+"checksums.txt"] = []byte{}
	}
}

// releaseTarGz is a release's tar.gz as goreleaser makes it: the binary at
// the top, beside the docs and the completions (a name longer than a tar
// header's 100 bytes, which archive/tar writes as a PAX record, first).
func releaseTarGz(t *testing.T, binary []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	long := "completions/" + strings.Repeat("x", 110) + "/contain"
	for _, f := range []struct {
		name string
		data []byte
	}{{"README.md", []byte("# contain\n")}, {long, []byte("not the binary")}, {"contain", binary}, {"man/contain.1", []byte(".TH CONTAIN 1\n")}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

// releaseZip is the Windows release's zip: contain.exe, deflated.
func releaseZip(t *testing.T, binary []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{"README.md", []byte("# contain\n")}, {"contain.exe", binary}, {"LICENSE", []byte("MIT\n")}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runnerFiles are the files a runner gives a step, in a directory of the
// test's (also RUNNER_TEMP).
type runnerFiles struct {
	dir                                 string
	env, path, output, state, summaryMD string
}

func newRunnerFiles(t *testing.T) *runnerFiles {
	t.Helper()
	dir := t.TempDir()
	f := &runnerFiles{dir: dir}
	for _, p := range []*string{&f.env, &f.path, &f.output, &f.state, &f.summaryMD} {
		file, err := os.CreateTemp(dir, "github-")
		if err != nil {
			t.Fatal(err)
		}
		file.Close()
		*p = file.Name()
	}
	return f
}

// environ is the test's environment without what a runner would set (the
// tests may run in a GitHub Actions job) and with the runner's files.
func (f *runnerFiles) environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "GITHUB_"), strings.HasPrefix(name, "RUNNER_"), strings.HasPrefix(name, "INPUT_"),
			strings.HasPrefix(name, "STATE_"), name == "CONTAIN_ORIGINATOR", name == "RUNNING_PROCESS_ORIGINATOR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"GITHUB_ENV=" + f.env, "GITHUB_PATH=" + f.path, "GITHUB_OUTPUT=" + f.output,
		"GITHUB_STATE=" + f.state, "GITHUB_STEP_SUMMARY=" + f.summaryMD, "RUNNER_TEMP=" + f.dir}, extra...)...)
}

// values reads a GITHUB_ENV, GITHUB_OUTPUT or GITHUB_STATE file as the
// runner does: name=value lines, and name<<DELIMITER blocks.
func values(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if name, delim, ok := strings.Cut(l, "<<"); ok && !strings.Contains(name, "=") {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("%s: no closing %s", file, delim)
			}
			m[name] = strings.Join(v, "\n")
			continue
		}
		name, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: line %q is neither name=value nor name<<DELIMITER", file, l)
		}
		m[name] = v
	}
	return m
}

func readText(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nodeResult is one run of a step's script.
type nodeResult struct {
	stdout, stderr string
	code           int
}

// runStep runs the action's script (main.js, post.js) with node, as a
// runner does, within a minute.
func runStep(t *testing.T, script string, env []string) nodeResult {
	t.Helper()
	node := testtool.Need(t, "node", "nodejs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("..", "action", script))
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := nodeResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("node %s ran past a minute\nstdout: %s\nstderr: %s", script, res.stdout, res.stderr)
	}
	return res
}

// commandLines are the stdout lines of workflow command kind (error,
// warning).
func commandLines(stdout, kind string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "::"+kind+"::") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// postEnv is the post step's environment: the main step's state as
// STATE_ variables, its GITHUB_ENV as the job's environment.
func postEnv(t *testing.T, f *runnerFiles) []string {
	t.Helper()
	var extra []string
	for k, v := range values(t, f.env) {
		extra = append(extra, k+"="+v)
	}
	for k, v := range values(t, f.state) {
		extra = append(extra, "STATE_"+k+"="+v)
	}
	return f.environ(extra...)
}

// laterStep runs script with sh as a later step of the job runs it: PATH
// with the lines of GITHUB_PATH in front, the job's GITHUB_ENV.
func laterStep(t *testing.T, f *runnerFiles, script string) *exec.Cmd {
	t.Helper()
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(readText(t, f.path)), "\n") {
		dirs = append([]string{strings.TrimSpace(l)}, dirs...)
	}
	env := f.environ("PATH=" + strings.Join(append(dirs, os.Getenv("PATH")), ":"))
	for k, v := range values(t, f.env) {
		env = append(env, k+"="+v)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = env
	return cmd
}

// readPIDFile waits for file to hold a PID, and reads it.
func readPIDFile(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitFor(t, "the step to write "+filepath.Base(file), 10*time.Second, func() bool {
		b, _ := os.ReadFile(file)
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = p
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	return pid
}

// TestActionJob: a job as a workflow runs it. The main step installs the
// release's contain (the archive's binary, checksum verified) for the
// version of the action's own tag, puts it on PATH and names the job's
// tool; a later step's contain tags with that name; the steps leave a
// background run, a daemon and an orphaned session behind; the post step
// ends the three, spares another tool's session, and says so in the job's
// summary. A second post step finds nothing left.
func TestActionJob(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "node", "nodejs")
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	rel := newFakeRelease(t)
	rel.add("0.9.1", "contain_0.9.1_darwin_arm64.tar.gz", []byte("another platform's archive"), nil)
	rel.add("0.9.1", "contain_0.9.1_linux_amd64.tar.gz", releaseTarGz(t, binary), nil)
	// No rel.latest: the version must come from the action's ref.

	f := newRunnerFiles(t)
	runID := strconv.FormatInt(time.Now().UnixNano()%1e12, 10)
	res := runStep(t, "main.js", f.environ("RUNNER_OS=Linux", "RUNNER_ARCH=X64", "GITHUB_RUN_ID="+runID, "GITHUB_RUN_ATTEMPT=2",
		"GITHUB_JOB=unit-tests", "GITHUB_ACTION_REF=v0.9.1", "INPUT_RELEASE-URL="+rel.URL, "INPUT_VERSION=", "INPUT_ORIGINATOR="))
	if res.code != 0 {
		t.Fatalf("main step: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	path := strings.TrimSpace(readText(t, f.path))
	installed := filepath.Join(path, "contain")
	got, err := os.ReadFile(installed)
	if err != nil || !bytes.Equal(got, binary) {
		t.Fatalf("GITHUB_PATH is %q: its contain is not the release's binary (%v)", path, err)
	}
	if st, err := os.Stat(installed); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s is not executable: %v", installed, st.Mode())
	}
	env := values(t, f.env)
	tool := env["CONTAIN_ORIGINATOR"]
	if !regexp.MustCompile(`^GHA-`+runID+`-2-unit-tests-[0-9a-f]{6}$`).MatchString(tool) || len(env) != 1 {
		t.Fatalf("GITHUB_ENV: %v, want CONTAIN_ORIGINATOR=GHA-%s-2-unit-tests-XXXXXX", env, runID)
	}
	if out := values(t, f.output); out["version"] != "0.9.1" || out["path"] != installed || out["originator"] != tool {
		t.Errorf("GITHUB_OUTPUT: %v", out)
	}

	// A later step's contain is the installed one, and tags with the
	// job's name.
	out, err := laterStep(t, f, `command -v contain; contain run -- sh -c 'echo "$RUNNING_PROCESS_ORIGINATOR"'`).Output()
	if lines := strings.Fields(string(out)); err != nil || len(lines) != 2 || lines[0] != installed || !strings.HasPrefix(lines[1], tool+":") {
		t.Fatalf("a later step's contain: %q (%v), want %s and a tag %s:PID", out, err, installed, tool)
	}

	// What the steps leave: a run in the background (a live session), a
	// daemon started with contain run -d, and an orphaned session (as a
	// run killed with its guard leaves); another tool's orphan beside them.
	dir := t.TempDir()
	background := laterStep(t, f, `contain run -- sh -c 'sleep 300 & echo $! > `+dir+`/bg.pid; wait' &
contain run -d -- sleep 301 > `+dir+`/daemon.pid`)
	if err := background.Run(); err != nil {
		t.Fatal(err)
	}
	bgSleep, daemon := readPIDFile(t, dir+"/bg.pid"), readPIDFile(t, dir+"/daemon.pid")
	killOnCleanup(t, bgSleep)
	killOnCleanup(t, daemon)
	orphan := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{})
	// An orphaned dev server: the summary names the ports it held.
	portsFile := filepath.Join(sharedDir(t), "ports")
	server := startTagged(t, fmt.Sprintf("%s:%d", tool, deadPID(t)), procOpts{}, listenBin(t), portsFile, "tcp4", "udp4")
	held := readListened(t, portsFile)
	other := startTagged(t, fmt.Sprintf("OTHER%s:%d", runID, deadPID(t)), procOpts{})

	res = runStep(t, "post.js", postEnv(t, f))
	if res.code != 0 || len(commandLines(res.stdout, "warning")) != 0 || len(commandLines(res.stdout, "error")) != 0 {
		t.Fatalf("post step: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	for what, pid := range map[string]int{"the background run's sleep": bgSleep, "the daemon": daemon, "the orphan": orphan, "the orphaned server": server} {
		if alive(pid) {
			t.Errorf("%s (PID %d) still runs after the post step\nstdout: %s", what, pid, res.stdout)
		}
	}
	if !alive(other) {
		t.Error("the post step ended another tool's session")
	}
	summary := readText(t, f.summaryMD)
	want := []string{
		fmt.Sprintf("4 sessions of <code>%s</code>, 5 processes ended.", tool), // the background run's sh and sleep
		fmt.Sprintf("| %d | <code>%s %s tcp4 udp4</code> | %s | reaped: ended after the first signal |", server, listenBin(t), portsFile, strings.Join(sortedWords(held), ", ")),
		fmt.Sprintf("| %d | <code>sleep 300</code> |  | stopped: ended |", bgSleep),
		fmt.Sprintf("| %d | <code>sleep 301</code> |  | reaped: ended after the first signal |", daemon),
		fmt.Sprintf("| %d | <code>sleep 300</code> |  | reaped: ended after the first signal |", orphan),
	}
	for _, w := range want {
		if !strings.Contains(summary, w) {
			t.Errorf("the summary lacks %q:\n%s", w, summary)
		}
	}
	if strings.Contains(summary, fmt.Sprintf("| %d |", other)) {
		t.Errorf("the summary names another tool's process %d:\n%s", other, summary)
	}

	// Nothing left: a second post step says so.
	os.WriteFile(f.summaryMD, nil, 0o644)
	res = runStep(t, "post.js", postEnv(t, f))
	if summary := readText(t, f.summaryMD); res.code != 0 || !strings.Contains(summary, fmt.Sprintf("Nothing was left: no process of <code>%s</code> ran when the job ended.", tool)) {
		t.Errorf("second post step: exit %d, summary:\n%s\nstdout: %s", res.code, summary, res.stdout)
	}
}

// TestActionLatestWindows: version latest follows the release page's
// redirect to the newest tag (the action's ref v1 is no version), and on
// a Windows runner the zip's contain.exe is installed.
func TestActionLatestWindows(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "node", "nodejs")
	binary, err := os.ReadFile(bin) // runs here, whatever its name
	if err != nil {
		t.Fatal(err)
	}
	rel := newFakeRelease(t)
	rel.latest = "v0.9.2"
	rel.add("0.9.2", "contain_0.9.2_windows_arm64.zip", releaseZip(t, binary), nil)
	f := newRunnerFiles(t)
	res := runStep(t, "main.js", f.environ("RUNNER_OS=Windows", "RUNNER_ARCH=ARM64", "GITHUB_ACTION_REF=v1",
		"INPUT_RELEASE-URL="+rel.URL, "INPUT_VERSION=latest", "INPUT_ORIGINATOR=nightly.build_7"))
	if res.code != 0 {
		t.Fatalf("main step: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	installed := filepath.Join(strings.TrimSpace(readText(t, f.path)), "contain.exe")
	if got, err := os.ReadFile(installed); err != nil || !bytes.Equal(got, binary) {
		t.Fatalf("%s is not the zip's contain.exe (%v)", installed, err)
	}
	if out := values(t, f.output); out["version"] != "0.9.2" || out["originator"] != "nightly.build_7" {
		t.Errorf("GITHUB_OUTPUT: %v", out)
	}
	if env := values(t, f.env); env["CONTAIN_ORIGINATOR"] != "nightly.build_7" {
		t.Errorf("GITHUB_ENV: %v", env)
	}
}

// TestActionRefuses: what the main step refuses fails it with one
// ::error:: line, and leaves PATH, the job's environment and the post
// step's state alone: no binary of a bad download is installed.
func TestActionRefuses(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "node", "nodejs")
	archive := releaseTarGz(t, []byte("#!/bin/sh\necho not contain\n"))
	for _, c := range []struct {
		name     string
		env      []string
		sums     map[string]string // checksums.txt's line for the asset
		want     *regexp.Regexp
		requests bool // the step may ask the server
	}{
		{name: "checksum mismatch", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64"},
			sums:     map[string]string{"contain_0.9.1_linux_amd64.tar.gz": strings.Repeat("0", 64)},
			want:     regexp.MustCompile(`^::error::checksum mismatch for contain_0\.9\.1_linux_amd64\.tar\.gz: checksums\.txt says 0{64}, the download is [0-9a-f]{64}: not installing it$`),
			requests: true},
		{name: "no checksum", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64"},
			sums:     map[string]string{"contain_0.9.1_linux_amd64.tar.gz": ""},
			want:     regexp.MustCompile(`^::error::checksums\.txt has no SHA-256 for contain_0\.9\.1_linux_amd64\.tar\.gz: not installing it$`),
			requests: true},
		{name: "not released", env: []string{"RUNNER_OS=macOS", "RUNNER_ARCH=X64"},
			want:     regexp.MustCompile(`^::error::cannot download http://.*/download/v0\.9\.1/contain_0\.9\.1_darwin_amd64\.tar\.gz: HTTP 404$`),
			requests: true},
		{name: "32-bit ARM", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=ARM"},
			want: regexp.MustCompile(`^::error::contain is not released for this runner \(RUNNER_OS=Linux, RUNNER_ARCH=ARM\): there are releases for Linux, macOS and Windows, on X64 and ARM64$`)},
		{name: "x86 Windows", env: []string{"RUNNER_OS=Windows", "RUNNER_ARCH=X86"},
			want: regexp.MustCompile(`^::error::contain is not released for this runner \(RUNNER_OS=Windows, RUNNER_ARCH=X86\)`)},
		{name: "a tag with a colon", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "INPUT_ORIGINATOR=CI:7"},
			want: regexp.MustCompile(`^::error::input originator: "CI:7" is not a tool name \(1 to 64 of A-Z a-z 0-9 _ \. -; no ':'\)$`)},
		{name: "not a version", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "INPUT_VERSION=1.2"},
			want: regexp.MustCompile(`^::error::input version: "1\.2" is not a version \(1\.2\.3, v1\.2\.3 or latest\)$`)},
		{name: "no latest", env: []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "INPUT_VERSION=latest"},
			want:     regexp.MustCompile(`^::error::cannot tell the newest release: http://.*/latest answered 404, not a redirect to a release's tag; give the input version$`),
			requests: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rel := newFakeRelease(t)
			rel.add("0.9.1", "contain_0.9.1_linux_amd64.tar.gz", archive, c.sums)
			f := newRunnerFiles(t)
			env := append([]string{"GITHUB_ACTION_REF=v0.9.1", "INPUT_RELEASE-URL=" + rel.URL}, c.env...)
			res := runStep(t, "main.js", f.environ(env...))
			errs := commandLines(res.stdout, "error")
			if res.code != 1 || len(errs) != 1 || !c.want.MatchString(errs[0]) {
				t.Fatalf("exit %d, ::error:: lines %q, want one matching %s\nstdout: %s\nstderr: %s", res.code, errs, c.want, res.stdout, res.stderr)
			}
			if n := rel.requests.Load(); !c.requests && n != 0 {
				t.Errorf("the step asked the server %d times before it refused", n)
			}
			for name, file := range map[string]string{"GITHUB_PATH": f.path, "GITHUB_ENV": f.env, "GITHUB_STATE": f.state, "GITHUB_OUTPUT": f.output} {
				if s := readText(t, file); s != "" {
					t.Errorf("%s was written: %q", name, s)
				}
			}
			if _, err := os.Stat(filepath.Join(f.dir, "contain-action")); err == nil {
				t.Error("something was installed under RUNNER_TEMP")
			}
		})
	}
}

// fakeContain is a contain that answers ps, stop and reap with the JSON
// given (and exits 1 after stop and reap when told), for what the real
// one cannot be made to report here: ports, a process that would not
// end, a command line with Markdown and HTML in it.
func fakeContain(t *testing.T, ps, stop, reap string, reapStatus int) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"ps.json": ps, "stop.json": stop, "reap.json": reap} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %[1]s/calls\ncase $1 in\nps) cat %[1]s/ps.json ;;\nstop) cat %[1]s/stop.json; exit 1 ;;\nreap) cat %[1]s/reap.json; exit %[2]d ;;\nesac\n", dir, reapStatus)
	exe := filepath.Join(dir, "contain")
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestActionSummary: the post step's summary names the ports each
// process held (ps's, taken before the reap, or the reap's own), escapes
// what processes chose (argv), and a process that could not be ended is a
// warning, or the job's failure with fail-on-reap-error; reap: false
// leaves everything as it is.
func TestActionSummary(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "node", "nodejs")
	const tool = "GHA-1-1-ports"
	ps := `{"sessions":[{"originator":{"value":"GHA-1-1-ports:99"},"processes":[
		{"pid":101,"started":"2026-01-01T00:00:00Z","ports":[{"proto":"tcp","address":"127.0.0.1","port":6379}]},
		{"pid":102,"started":"2026-01-01T00:00:00Z","ports":[]}]}],"unreadable":{}}`
	stop := `{"sessions":[],"processes":[]}`
	reap := `{"dry_run":false,"processes":[
		{"pid":101,"originator":{"value":"GHA-1-1-ports:99"},"argv":["redis-server","*:6379"],"comm":"redis-server","started":"2026-01-01T00:00:00Z","skipped":false,"result":"ended after the first signal","alive":false,"failed":false},
		{"pid":102,"originator":{"value":"GHA-1-1-ports:99"},"argv":["sh","-c","x | <script>alert(1)</script> [a](b) ` + "`y`" + `"],"comm":"sh","started":"2026-01-01T00:00:00Z","skipped":false,"result":"still running: operation not permitted","alive":true,"failed":true},
		{"pid":103,"originator":{"value":"GHA-1-1-ports:98"},"argv":["python3","-m","http.server"],"comm":"python3","started":"2026-01-01T00:00:01Z","ports":[8000,"udp/5353"],"skipped":false,"result":"killed with SIGKILL","alive":false,"failed":false},
		{"pid":104,"originator":{"value":"GHA-1-1-ports:97"},"argv":["sleep","9"],"comm":"sleep","started":"2026-01-01T00:00:01Z","skipped":true,"result":"left running: a daemon","alive":true,"failed":false}],
		"cgroups":[],"skipped_sessions":[{"originator":"GHA-1-1-ports:97","state":"daemon","reason":"every process is marked as a daemon"}]}`
	exe := fakeContain(t, ps, stop, reap, 1)
	state := func(strict string) []string {
		return []string{"STATE_binary=" + exe, "STATE_originator=" + tool, "STATE_reap=true", "STATE_include_daemons=false", "STATE_fail_on_reap_error=" + strict}
	}

	f := newRunnerFiles(t)
	res := runStep(t, "post.js", f.environ(state("false")...))
	warnings := commandLines(res.stdout, "warning")
	if res.code != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "1 of the processes the job left could not be ended") || len(commandLines(res.stdout, "error")) != 0 {
		t.Errorf("post step: exit %d, warnings %q\nstdout: %s\nstderr: %s", res.code, warnings, res.stdout, res.stderr)
	}
	summary := readText(t, f.summaryMD)
	for _, w := range []string{
		"2 sessions of <code>GHA-1-1-ports</code>, 2 processes ended, **1 process still running**.",
		"| session | PID | command | ports | what became of it |",
		"| <code>GHA-1-1-ports:99</code> | 101 | <code>redis-server &#39;&#42;:6379&#39;</code> | 127.0.0.1:6379 | reaped: ended after the first signal |",
		"| 103 | <code>python3 -m http.server</code> | 8000, udp/5353 | reaped: killed with SIGKILL |",
		"&#124; &#60;script&#62;alert&#40;1&#41;&#60;/script&#62; &#91;a&#93;&#40;b&#41; &#96;y&#96;",
		"| reaped: still running: operation not permitted |",
		"Left running: <code>GHA-1-1-ports:97</code> (daemon): every process is marked as a daemon.",
	} {
		if !strings.Contains(summary, w) {
			t.Errorf("the summary lacks %q:\n%s", w, summary)
		}
	}
	for _, bad := range []string{"<script>", "| x |", "[a](b)", "104 |"} {
		if strings.Contains(summary, bad) {
			t.Errorf("the summary holds %q:\n%s", bad, summary)
		}
	}
	calls := readText(t, filepath.Join(filepath.Dir(exe), "calls"))
	if !strings.Contains(calls, "reap --originator="+tool+" --format json\n") {
		t.Errorf("include-daemons false: reap was run as\n%s", calls)
	}

	// fail-on-reap-error: the same is the step's failure.
	f = newRunnerFiles(t)
	res = runStep(t, "post.js", f.environ(state("true")...))
	if errs := commandLines(res.stdout, "error"); res.code != 1 || len(errs) != 1 || !strings.Contains(errs[0], "(fail-on-reap-error)") {
		t.Errorf("fail-on-reap-error: exit %d, errors %q\nstdout: %s", res.code, errs, res.stdout)
	}

	// reap: false: contain is not run, and nothing is written.
	os.Remove(filepath.Join(filepath.Dir(exe), "calls"))
	f = newRunnerFiles(t)
	res = runStep(t, "post.js", f.environ("STATE_binary="+exe, "STATE_originator="+tool, "STATE_reap=false"))
	if _, err := os.Stat(filepath.Join(filepath.Dir(exe), "calls")); res.code != 0 || err == nil || readText(t, f.summaryMD) != "" {
		t.Errorf("reap false: exit %d, contain run: %v, summary %q", res.code, err == nil, readText(t, f.summaryMD))
	}
}

// TestActionReadme: the README's lines for a workflow are the sample
// workflow's (docs/examples/action-workflow.yml, which .ci/run lints with
// actionlint against action.yml), and each input they give is one
// action.yml declares.
func TestActionReadme(t *testing.T) {
	t.Parallel()
	var lines []string
	for _, f := range fences(readme(t)) {
		if strings.Contains(f, "uses: contain-cli/contain@v1") {
			lines = strings.Split(strings.TrimRight(f, "\n"), "\n")
		}
	}
	if len(lines) == 0 {
		t.Fatal("the README shows no uses: contain-cli/contain@v1")
	}
	sample := readText(t, "../docs/examples/action-workflow.yml")
	inputs := actionInputs(t)
	given := 0
	withIndent := -1 // the indentation of the line "with:", while in it
	for _, l := range lines {
		if !strings.Contains(sample, l+"\n") {
			t.Errorf("the README's line %q is not in docs/examples/action-workflow.yml", l)
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case strings.TrimSpace(l) == "with:":
			withIndent = indent
		case withIndent >= 0 && indent > withIndent:
			name, _, _ := strings.Cut(strings.TrimSpace(l), ":")
			if !inputs[name] {
				t.Errorf("the README gives input %q, which action.yml does not declare (%v)", name, inputs)
			}
			given++
		default:
			withIndent = -1
		}
	}
	if given == 0 {
		t.Errorf("the README's lines give the action no input:\n%s", strings.Join(lines, "\n"))
	}
}

// actionInputs are the names under action.yml's inputs.
func actionInputs(t *testing.T) map[string]bool {
	t.Helper()
	text := readText(t, "../action.yml")
	_, after, ok := strings.Cut(text, "\ninputs:\n")
	if !ok {
		t.Fatal("action.yml has no inputs")
	}
	inputs := map[string]bool{}
	for _, l := range strings.Split(after, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			break
		}
		if m := regexp.MustCompile(`^  ([a-z-]+):$`).FindStringSubmatch(l); m != nil {
			inputs[m[1]] = true
		}
	}
	return inputs
}

// sortedWords are the ports as contain orders them: by number.
func sortedWords(ls []listened) []string {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b listened) int { return a.port - b.port })
	var w []string
	for _, l := range ls {
		w = append(w, l.word())
	}
	return w
}
