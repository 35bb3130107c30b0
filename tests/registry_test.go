//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/testtool"
)

// startAs starts argv with env (and nothing else), in a session of its
// own, as nobody when asNobody; it is waited for when it ends and killed
// when the test ends.
func startAs(t *testing.T, asNobody bool, env []string, argv ...string) int {
	t.Helper()
	if asNobody {
		testtool.Need(t, "setpriv", "util-linux")
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	pid := cmd.Process.Pid
	killOnCleanup(t, pid)
	waitFor(t, "setpriv to exec", 10*time.Second, func() bool {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return string(comm) != "setpriv\n"
	})
	return pid
}

// envWrittenOver reports whether pid's environment no longer parses as
// NAME=value entries: NULs or spaces where the variables were.
func envWrittenOver(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil || len(b) == 0 {
		return false
	}
	return bytes.Contains(b, []byte{0, 0}) || b[0] == 0 || !bytes.Contains(b, []byte("="))
}

// startTime reads pid's start time in clock ticks.
func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// titled starts perl tagged with value, which writes its title over its
// environment ($0), as redis-server and nginx do.
func titled(t *testing.T, asNobody bool, value string) int {
	t.Helper()
	testtool.Need(t, "perl", "perl-base")
	env := []string{"PATH=" + os.Getenv("PATH"), "RUNNING_PROCESS_ORIGINATOR=" + value}
	pid := startAs(t, asNobody, env, "perl", "-e", `$0 = "contain test: a title"; sleep 300`)
	waitFor(t, "perl to write its title", 10*time.Second, func() bool { return envWrittenOver(pid) })
	return pid
}

// TestPsCountsOverwritten: a process that wrote its title over its
// environment (and its tag) is neither listed nor guessed at, but counted
// on stderr with the reason, as root and as nobody.
func TestPsCountsOverwritten(t *testing.T) {
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			tool := uniqueTool(t)
			pid := titled(t, nobody, fmt.Sprintf("%s:%d", tool, deadPID(t)))
			res := run(t, runOpts{asNobody: nobody}, "ps", "--format", "json", "-o", tool)
			wantCode(t, res, 0)
			out := decode[psOutput](t, res)
			if len(out.Sessions) != 0 {
				t.Errorf("ps guessed at %d: %+v", pid, out.Sessions)
			}
			const reason = "environment overwritten by its process title"
			if out.Unreadable[reason] == 0 {
				t.Errorf("not counted: unreadable %v", out.Unreadable)
			}
			if !regexp.MustCompile(`contain: skipped \d+ process(es)? whose environment cannot be read \([^\n]*\d+: ` + reason).MatchString(res.stderr) {
				t.Errorf("stderr %q", res.stderr)
			}
			if !alive(pid) {
				t.Error("ps killed it")
			}
		})
	}
}

// registryDir makes $XDG_RUNTIME_DIR for a contain reap of the test's own,
// and its contain directory, of nobody when asNobody.
func registryDir(t *testing.T, asNobody bool) (xdg, dir string) {
	t.Helper()
	xdg = sharedDir(t)
	dir = filepath.Join(xdg, "contain")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if asNobody {
		for _, d := range []string{xdg, dir} {
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(xdg, 0o700)
	}
	return xdg, dir
}

// registryReapOutput is what these tests read of contain reap --format json.
type registryReapOutput struct {
	Processes []struct {
		PID        int `json:"pid"`
		Originator struct {
			Value string `json:"value"`
		} `json:"originator"`
		Argv    []string `json:"argv"`
		FoundBy string   `json:"found_by"`
		Result  string   `json:"result"`
	} `json:"processes"`
}

// registryEntry is one process in a registry: PID and start time.
type registryEntry struct {
	pid   int
	start uint64
}

// writeRegistry writes, as contain run does, the registry of session
// value (contain run PID, started at start) in dir, owned by nobody when
// asNobody, and returns its path.
func writeRegistry(t *testing.T, dir string, asNobody bool, value string, start uint64, procs ...registryEntry) string {
	t.Helper()
	_, pidText, _ := strings.Cut(value, ":")
	var b strings.Builder
	fmt.Fprintf(&b, "contain registry 1\nsession %s %d\n", value, start)
	for i, p := range procs {
		kind := "member"
		if i == 0 {
			kind = "command"
		}
		fmt.Fprintf(&b, "%s %d %d\n", kind, p.pid, p.start)
	}
	path := filepath.Join(dir, fmt.Sprintf("session.%s.%d", pidText, start))
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if asNobody {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestReapRegistry: contain reap finds what a registry of a contain run
// that ended names, though no tag can be read of it (a title written over
// the environment, a real redis-server where installed, an environment
// cleared by env -i) and what it started, and ends it; a recycled PID
// (another start time) and what a registry of a running contain names are
// left alone; the spent registry is removed. As root and as nobody.
func TestReapRegistry(t *testing.T) {
	t.Parallel()
	for _, nobody := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobody=%v", nobody), func(t *testing.T) {
			if nobody {
				requireRoot(t, "switching to nobody")
			}
			xdg, dir := registryDir(t, nobody)
			work := sharedDir(t)
			if nobody {
				os.Chown(work, 65534, 65534)
			}
			tool := uniqueTool(t)
			value := fmt.Sprintf("%s:%d", tool, deadPID(t))
			path := os.Getenv("PATH")
			title := titled(t, nobody, value)
			cleared := startAs(t, nobody, []string{"PATH=" + path}, "sh", "-c", "sleep 300 & echo $! > "+work+"/child; wait")
			waitFor(t, "the child", 10*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(work, "child"))
				return len(b) > 0
			})
			child := readPID(t, work, "child")
			killOnCleanup(t, child)
			want := []int{title, cleared, child}
			listed := []registryEntry{{title, startTime(t, title)}, {cleared, startTime(t, cleared)}}
			if testtool.Have(t, "redis-server", "redis-server") {
				sh := fmt.Sprintf(`redis-server --daemonize yes --port 0 --unixsocket %s/r.sock --pidfile %s/r.pid --dir %s --logfile /dev/null --save ''`, work, work, work)
				argv := []string{"sh", "-c", sh}
				if nobody {
					argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = []string{"PATH=" + path, "RUNNING_PROCESS_ORIGINATOR=" + value}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("redis-server: %v: %s", err, out)
				}
				waitFor(t, "redis-server's PID file", 10*time.Second, func() bool {
					b, _ := os.ReadFile(filepath.Join(work, "r.pid"))
					return len(bytes.TrimSpace(b)) > 0
				})
				redis := readPID(t, work, "r.pid")
				killOnCleanup(t, redis)
				waitFor(t, "redis-server to write its title", 10*time.Second, func() bool { return envWrittenOver(redis) })
				want = append(want, redis)
				listed = append(listed, registryEntry{redis, startTime(t, redis)})
			}
			// A recycled PID: listed with another start time.
			stranger := startAs(t, nobody, []string{"PATH=" + path}, "sleep", "300")
			listed = append(listed, registryEntry{stranger, startTime(t, stranger) - 1})
			// The run started just before its processes: reap's look for
			// what it could not tell spans the run's life, not the boot's.
			spent := writeRegistry(t, dir, nobody, value, startTime(t, title)-1, listed...)
			// A registry whose contain runs: never used.
			originator := startAs(t, nobody, []string{"PATH=" + path}, "sleep", "300")
			spared := startAs(t, nobody, []string{"PATH=" + path}, "sleep", "300")
			liveValue := fmt.Sprintf("%s:%d", tool, originator)
			kept := writeRegistry(t, dir, nobody, liveValue, startTime(t, originator), registryEntry{spared, startTime(t, spared)})

			// Without the registry, nothing of the session is found.
			res := run(t, runOpts{asNobody: nobody, env: []string{"XDG_RUNTIME_DIR=" + t.TempDir()}}, "reap", "--format", "json", "-o", tool)
			wantCode(t, res, 0)
			if out := decode[reapOutput](t, res); len(out.Processes) != 0 {
				t.Errorf("found without a registry: %+v", out.Processes)
			}

			res = run(t, runOpts{asNobody: nobody, env: []string{"XDG_RUNTIME_DIR=" + xdg}}, "reap", "--format", "json", "-v", "-o", tool, "-g", "500ms")
			if others := untoldOthers(res.stderr, want); res.code == 1 && len(others) > 0 {
				// As root, a root process another test started
				// meanwhile, orphaned and with a cleared or written-over
				// environment (a daemon's double fork), is one reap cannot
				// tell from the session's: it says so and exits 1.
				t.Logf("reap could not tell %v, none of this test's: status 1 as documented", others)
			} else {
				wantCode(t, res, 0)
			}
			out := decode[registryReapOutput](t, res)
			got := map[int]string{}
			for _, p := range out.Processes {
				got[p.PID] = p.Result
			}
			for _, pid := range want {
				if r := got[pid]; r != "ended after the first signal" {
					t.Errorf("%d: %q\nstdout: %s\nstderr: %s", pid, r, res.stdout, res.stderr)
				}
			}
			if len(got) != len(want) {
				t.Errorf("reported %v, want %v", got, want)
			}
			for _, p := range out.Processes {
				if p.Originator.Value != value || p.FoundBy != "registry" {
					t.Errorf("%d: session %q, found by %q", p.PID, p.Originator.Value, p.FoundBy)
				}
				if len(p.Argv) > 0 && p.Argv[len(p.Argv)-1] == "" {
					t.Errorf("%d: argv %q ends with empty strings", p.PID, p.Argv)
				}
			}
			for _, pid := range want {
				waitFor(t, fmt.Sprintf("%d to end", pid), 2*time.Second, func() bool { return !alive(pid) })
			}
			for _, pid := range []int{stranger, originator, spared} {
				if !alive(pid) || procState(pid) == 'T' {
					t.Errorf("%d was touched (state %c)", pid, procState(pid))
				}
			}
			if _, err := os.Stat(spent); err == nil {
				t.Error("the spent registry was not removed")
			}
			if _, err := os.Stat(kept); err != nil {
				t.Errorf("the registry of a running contain was removed: %v", err)
			}
		})
	}
}

// untoldOthers lists the processes reap said it could not tell (its
// "started after session ... not signalled" lines), when every one of them
// is another test's (not in ours); nil when one is ours or none was said.
func untoldOthers(stderr string, ours []int) []int {
	var others []int
	for _, l := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(l, "contain: reap: ")
		if !ok || !strings.Contains(rest, " started after session ") {
			continue
		}
		f := strings.Fields(rest)
		pid, err := strconv.Atoi(f[0])
		if err != nil || slices.Contains(ours, pid) {
			return nil
		}
		others = append(others, pid)
	}
	return others
}

// TestReapRegistryUnsafeDir: a registry directory that others may write,
// or that is a link, is not read: reap says so and finds nothing there.
func TestReapRegistryUnsafeDir(t *testing.T) {
	xdg := sharedDir(t)
	dir := filepath.Join(xdg, "contain")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	tool := uniqueTool(t)
	value := fmt.Sprintf("%s:%d", tool, deadPID(t))
	victim := startAs(t, false, []string{"PATH=" + os.Getenv("PATH")}, "sleep", "300")
	writeRegistry(t, dir, false, value, 4242, registryEntry{victim, startTime(t, victim)})
	res := run(t, runOpts{env: []string{"XDG_RUNTIME_DIR=" + xdg}}, "reap", "-o", tool)
	wantCode(t, res, 0)
	if !regexp.MustCompile(`(?m)^contain: some registries of contain's sessions cannot be read: [^\n]*/contain: refused: group or others may write it \(mode 777\)$`).MatchString(res.stderr) {
		t.Errorf("stderr %q", res.stderr)
	}
	time.Sleep(50 * time.Millisecond)
	if !alive(victim) {
		t.Error("reap used a registry others could have written")
	}
}
