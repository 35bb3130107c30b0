//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileName is a process name made to take over a terminal and a log:
// a clear-screen escape, an OSC window title ended by BEL, and a newline
// that starts a forged line of contain's own. A process that runs a file
// of this name has it in its argv[0] and its executable's path, and its
// first 15 bytes as its name (comm): "\x1b[2J\x1b]0;pwn\a\nco".
const hostileName = "\x1b[2J\x1b]0;pwn\a\ncontain: forged"

// hostileShown is how contain shows the name's first 15 bytes, escaped as
// text.Printable does: what a line that names the process must carry.
const hostileShown = `\x1b[2J\x1b]0;pwn\a\nco`

// hostileCopy copies the program at src (a path, or a name on PATH) into
// dir under hostileName, executable by anyone, and returns its path: a
// process that runs it has the hostile name, argv and executable.
func hostileCopy(t *testing.T, dir, src string) string {
	t.Helper()
	if !strings.ContainsRune(src, '/') {
		for _, d := range filepath.SplitList(os.Getenv("PATH")) {
			if _, err := os.Stat(filepath.Join(d, src)); err == nil {
				src = filepath.Join(d, src)
				break
			}
		}
	}
	// Copied by cp, not written here: a file this process held open for
	// writing would be inherited by another test's fork for an instant,
	// and its exec would fail with ETXTBSY.
	path := filepath.Join(dir, hostileName)
	if out, err := exec.Command("cp", src, path).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v\n%s", src, err, out)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantEscaped fails the test unless out names the hostile process (want,
// escaped) and carries none of its bytes raw: no ESC, no BEL, no line
// that the name's newline started.
func wantEscaped(t *testing.T, what, out string, want ...string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\a") {
		t.Errorf("%s wrote a raw ESC or BEL from another process's name:\n%q", what, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "contain: forged") || strings.HasPrefix(line, "co") && !strings.HasPrefix(line, "contain") {
			t.Errorf("%s wrote a line that a process's name forged: %q\nin:\n%q", what, line, out)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, out)
		}
	}
}

// TestPrintReapVerbose: root's contain reap -v on nobody's orphaned
// session whose process has a hostile name shows the name escaped, in
// its "sent SIGTERM" line as in its table; it reached root's terminal
// raw before.
func TestPrintReapVerbose(t *testing.T) {
	t.Parallel()
	requireRoot(t, "another user's process")
	dir := sharedDir(t)
	h := hostileCopy(t, dir, "sleep")
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	pid := startTagged(t, value, procOpts{nobody: true}, h, "300")
	res := run(t, runOpts{}, "reap", "-v", "-o", tool)
	wantCode(t, res, 0)
	waitFor(t, "the orphan to end", 5*time.Second, func() bool { return !alive(pid) })
	wantEscaped(t, "contain reap -v", res.stdout+res.stderr,
		fmt.Sprintf("sent SIGTERM to %d (%s)", pid, hostileShown))
}

// TestPrintRunVerbose: contain run -v names a leftover that renamed
// itself (a setsid escapee that runs a hostile file) escaped, in each of
// its lines about it.
func TestPrintRunVerbose(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	h := hostileCopy(t, dir, "sleep")
	res := run(t, runOpts{}, "run", "-v", "--", "sh", "-c",
		setsid+`"$0" 300 & echo $! > $1/escapee; sleep 0.3`, h, dir)
	wantCode(t, res, 0)
	escapee := readPID(t, dir, "escapee")
	killOnCleanup(t, escapee)
	wantEscaped(t, "contain run -v", res.stderr, fmt.Sprintf("leftover %d (%s)", escapee, hostileShown))
}

// TestPrintDaemonLines: the -v lines about a process marked
// RUNNING_PROCESS_IS_DAEMON=1 (spared with --allow-daemons, ended with
// the group without) show its hostile name escaped.
func TestPrintDaemonLines(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	h := hostileCopy(t, dir, "sleep")
	script := `RUNNING_PROCESS_IS_DAEMON=1 "$0" 300 >/dev/null 2>&1 & echo $! > $1/$2; sleep 0.3`
	res := run(t, runOpts{}, "run", "-v", "--allow-daemons", "--", "sh", "-c", script, h, dir, "spared")
	wantCode(t, res, 0)
	spared := readPID(t, dir, "spared")
	killOnCleanup(t, spared)
	wantEscaped(t, "contain run -v --allow-daemons", res.stderr, fmt.Sprintf("sparing %d (%s)", spared, hostileShown))
	syscall.Kill(spared, syscall.SIGKILL)

	res = run(t, runOpts{}, "run", "-v", "--", "sh", "-c", script, h, dir, "ended")
	wantCode(t, res, 0)
	ended := readPID(t, dir, "ended")
	killOnCleanup(t, ended)
	wantEscaped(t, "contain run -v", res.stderr,
		fmt.Sprintf("%d (%s) is marked RUNNING_PROCESS_IS_DAEMON=1", ended, hostileShown))
}

// TestPrintCrashGuard: after contain is killed, the crash guard's -v
// lines name the processes it ends escaped, with a cgroup and with
// macOS's layers (the guard waiting in /bin/sh).
func TestPrintCrashGuard(t *testing.T) {
	t.Parallel()
	for _, o := range []runOpts{{}, {env: []string{macOSLayers}}} {
		t.Run(strings.Join(append([]string{"default"}, o.env...), " "), func(t *testing.T) {
			t.Parallel()
			dir := sharedDir(t)
			h := hostileCopy(t, dir, "sleep")
			cmd, stderr, wait := startContainLive(t, o, "run", "-v", "--", "sh", "-c",
				setsid+`"$0" 300 & echo $! > $1/escapee; echo $$ > $1/ready; wait`, h, dir)
			guard := guardPID(t, stderr)
			readPID(t, dir, "ready")
			escapee := readPID(t, dir, "escapee")
			killOnCleanup(t, escapee)
			waitFor(t, "the escapee to run the hostile file", 10*time.Second, func() bool {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", escapee))
				return strings.HasPrefix(string(b), "\x1b")
			})
			cmd.Process.Signal(syscall.SIGKILL)
			wait()
			waitFor(t, "the guard's end", 10*time.Second, func() bool { return !alive(guard) })
			wantEscaped(t, "the crash guard", stderr(),
				fmt.Sprintf("guard: sent SIGTERM to %d (%s)", escapee, hostileShown),
				fmt.Sprintf("guard: %d (%s): ", escapee, hostileShown))
		})
	}
}

// TestPrintUntold: with macOS's layers, the -v line about a process that
// contain could not tell (its environment written over by a title) shows
// its hostile name escaped.
func TestPrintUntold(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	h := hostileCopy(t, dir, titledBin(t))
	_, wait := startContain(t, runOpts{env: []string{macOSLayers}}, "run", "-v", "--", "sh", "-c",
		`echo $$ > $0/ready; while [ ! -f $0/go ]; do sleep 0.01; done`, dir)
	readPID(t, dir, "ready")
	// Started beside the session, as its user, after COMMAND.
	startAs(t, false, withoutTag(os.Environ()), h, "daemon", filepath.Join(dir, "titled"))
	daemon := readPID(t, dir, "titled")
	killOnCleanup(t, daemon)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := wait()
	wantCode(t, res, 0)
	wantEscaped(t, "contain run -v (untold)", res.stderr, fmt.Sprintf("could not tell %d (%s)", daemon, hostileShown))
}

// TestPrintStop: contain stop's line about an originator it will not ask
// (CONTAIN:PID, whose PID runs a hostile file: "it runs PATH") shows the
// executable's path escaped, and its table the command line.
func TestPrintStop(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	h := hostileCopy(t, dir, "sleep")
	orig := startAs(t, false, withoutTag(os.Environ()), h, "300")
	value := fmt.Sprintf("CONTAIN:%d", orig)
	member := startTagged(t, value, procOpts{}, h, "300")
	res := run(t, runOpts{}, "stop", "-t", "1s", value)
	if !alive(member) {
		t.Errorf("contain stop ended %d, a member of a session whose originator is no contain run", member)
	}
	wantEscaped(t, "contain stop", res.stdout+res.stderr, fmt.Sprintf("not asking PID %d", orig), `/\x1b[2J\x1b]0;pwn\a\ncontain: forged`)
}
