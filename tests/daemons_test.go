//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
)

// Real daemons that nobody here wrote, started inside contain run, and
// contain killed with SIGKILL at many moments after each start: nothing
// of theirs may survive. They are what a hand-written helper is not:
// redis and nginx write their process title over their environment (no
// tag to read), ssh-agent and gpg-agent make themselves undumpable (their
// environment is hidden even from their own user), and each forks, calls
// setsid and loses its parent within a millisecond or two.
//
// Without a cgroup (an ordinary user; CONTAIN_DISABLE=cgroup) the guard
// used to learn of such a process only from a scan, 5 to 200 ms apart: as
// nobody, 3 of 12 redis kills at 10-90 ms left redis running (seen with
// CONTAIN_DISABLE=shim, which turns the fix off). The shim, a subreaper
// between contain and COMMAND, holds every one of them in its subtree.

// crashDaemon is one real daemon: how to start it in directory $D, and
// the Debian package that has it.
type crashDaemon struct {
	name, bin, pkg string
	start          string // shell; $D is a directory of the round's, $ROOT is "1" as root
	// passwd: it needs its user in the password database; unprivileged,
	// it runs as nobody, and its processes are told by $D in their
	// command line or environment.
	passwd bool
}

var crashDaemons = []crashDaemon{
	{"redis", "redis-server", "redis-server",
		`redis-server --daemonize yes --port 0 --unixsocket $D/redis.sock --dir $D --logfile /dev/null --save ''`, false},
	{"nginx", "nginx", "nginx",
		`printf 'pid %s/nginx.pid; error_log /dev/null; worker_processes 2; events {} http { access_log off; client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s; uwsgi_temp_path %s; scgi_temp_path %s; server { listen unix:%s/nginx.sock; } }\n' $D $D $D $D $D $D $D > $D/nginx.conf
nginx -p $D -c $D/nginx.conf -e /dev/null 2>/dev/null`, false},
	{"memcached", "memcached", "memcached",
		`memcached -d -s $D/mc.sock -P $D/mc.pid ${ROOT:+-u root}`, false},
	{"ssh-agent", "ssh-agent", "openssh-client", `ssh-agent -a $D/agent.sock >/dev/null`, false},
	{"gpg-agent", "gpg-agent", "gpg-agent",
		`mkdir -m 700 $D/gnupg && gpg-agent --homedir $D/gnupg --daemon >/dev/null 2>&1`, false},
	{"dbus-daemon", "dbus-daemon", "dbus-daemon",
		`dbus-daemon --config-file=/usr/share/dbus-1/session.conf --fork --address=unix:path=$D/bus >/dev/null`, true},
	{"tmux", "tmux", "tmux", `tmux -S $D/tmux.sock new-session -d sleep 300`, false},
	{"screen", "screen", "screen", `SCREENDIR=$D/screen screen -dmS "contain-test$D" sleep 300`, true},
	{"setsid -f", "setsid", "util-linux", `setsid -f sleep 300`, false},
	{"nohup", "nohup", "coreutils", `(nohup sleep 300 >/dev/null 2>&1 &)`, false},
	{"double fork, env -i", "perl", "perl-base",
		// $D as an argument: its environment is empty, so the test finds
		// (and kills) it by its command line.
		`env -i perl -e 'use POSIX; fork and exit; POSIX::setsid(); fork and exit; sleep 300' "$D"`, false},
}

// crashMode is how contain runs: as whom, with which layers.
type crashMode struct {
	name     string
	unpriv   bool // as a user of the round's own (no cgroup: the shim)
	disabled string
	control  bool // without contain: the daemon must survive
	// bound is how long after the kill a round waits for the session's
	// end (0: 1.5 s, the macOS layers' rounds, where survivors are
	// expected and counted).
	bound time.Duration
}

var crashModes = []crashMode{
	{name: "unprivileged", unpriv: true},
	{name: "unprivileged, CONTAIN_DISABLE=cgroup,subreaper", unpriv: true, disabled: "cgroup,subreaper"},
	{name: "root", unpriv: false},
}

func TestCrashRealDaemons(t *testing.T) {
	requireRoot(t, "the daemons run as users of their own, and as root with a cgroup")
	// In parallel with the other parallel tests, and its modes with each
	// other: each round has a user and a directory of its own, and sees
	// only its own processes.
	t.Parallel()
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	if n, err := strconv.Atoi(os.Getenv("CONTAIN_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	testtool.Need(t, "setpriv", "util-linux") // the unprivileged modes
	var daemons []crashDaemon
	for _, d := range crashDaemons {
		if needTool(t, d.bin, d.pkg) {
			daemons = append(daemons, d)
		}
	}
	uid := 61000 + os.Getpid()%1000*4
	// The control: without contain, each daemon outlives the shell that
	// started it, and the test sees it (else the rounds prove nothing).
	// The control and the modes run at once, each daemon's rounds beside
	// the others' (see daemonRounds).
	var modes sync.WaitGroup
	defer modes.Wait()
	control := uid
	uid += 2 * len(daemons)
	modes.Go(func() {
		t.Run("control", func(t *testing.T) {
			daemonRounds(t, daemons, func(t *testing.T, di int, d crashDaemon) {
				uid := control + 2*di // two users of this daemon's own
				msg, _ := crashRound(t, crashMode{unpriv: true, control: true}, d, uid+1, 300*time.Millisecond, false)
				if msg == "" {
					// A loaded machine may not have started the daemon
					// within 300 ms: once more, with time to spare.
					msg, _ = crashRound(t, crashMode{unpriv: true, control: true}, d, uid+2, 2*time.Second, false)
				}
				if msg == "" {
					t.Errorf("nothing survived its shell without contain")
				}
			})
		})
	})
	for mi, m := range crashModes {
		modes.Go(func() {
			t.Run(m.name, func(t *testing.T) {
				uid := uid + (mi+1)*len(daemons)*rounds // users of this mode's own
				daemonRounds(t, daemons, func(t *testing.T, di int, d crashDaemon) {
					uid := uid + di*rounds // each round has a user and a directory of its own
					var left []string
					var slowest time.Duration
					for i := range rounds {
						uid++
						// Kills from 0 to 150 ms after the daemon's start,
						// spread over the rounds; one round in three starts
						// it a second after COMMAND, when contain scans less
						// often.
						delay := time.Duration(i*53%151) * time.Millisecond
						late := i%3 == 2
						m := m
						m.bound = crashBound
						msg, took := crashRound(t, m, d, uid, delay, late)
						slowest = max(slowest, took)
						if msg != "" {
							left = append(left, fmt.Sprintf("round %d (kill after %v): %s", i, delay, msg))
						}
					}
					t.Logf("%d kills, %d left something; the last process ended at most %v after the kill",
						rounds, len(left), slowest.Round(time.Millisecond))
					if len(left) > 0 {
						t.Fatalf("left behind:\n%s", strings.Join(left, "\n"))
					}
				})
			})
		})
	}
}

// roundSlots bounds the daemon rounds running at once, across
// TestCrashRealDaemons and TestModesMacOSDaemons. They run beside the
// test binary's -parallel slots, not in them: a round mostly waits (for a
// daemon's start, a kill, its end), and in the slots the rounds' 60-odd
// subtests queued behind every other test, the suite's long pole.
var roundSlots = make(chan struct{}, 6)

// daemonRounds runs round(t, i, daemons[i]) as subtest daemons[i].name of
// t for each daemon, at once but at most cap(roundSlots) of them across
// the tests, and returns when all have.
func daemonRounds(t *testing.T, daemons []crashDaemon, round func(t *testing.T, i int, d crashDaemon)) {
	var wg sync.WaitGroup
	for i, d := range daemons {
		wg.Go(func() {
			roundSlots <- struct{}{}
			defer func() { <-roundSlots }()
			t.Run(d.name, func(t *testing.T) { round(t, i, d) })
		})
	}
	wg.Wait()
}

// crashRound runs one daemon under contain (or, for the control, without
// it), kills contain delay after the daemon's start began, and reports
// what was left at m.bound ("": nothing), and how long
// after the kill the last process ended.
func crashRound(t *testing.T, m crashMode, d crashDaemon, uid int, delay time.Duration, late bool) (string, time.Duration) {
	t.Helper()
	dir := sharedDir(t)
	// The kill comes delay after the daemon's start began: $D/starting.
	script := ": > $D/starting; " + d.start + "; sleep 30"
	if late {
		script = "sleep 1; " + script
	}
	argv := []string{"sh", "-c", script}
	if !m.control {
		argv = append([]string{bin, "run", "--"}, argv...)
	}
	env := append(os.Environ(), "D="+dir, "HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	if m.unpriv && d.passwd {
		uid = 65534
	}
	if m.unpriv {
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
		argv = append([]string{"setpriv", "--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "--"}, argv...)
	} else {
		env = append(env, "ROOT=1")
	}
	if m.disabled != "" {
		env = append(env, "CONTAIN_DISABLE="+m.disabled)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	// No pipe: a survivor holding it would keep Wait waiting.
	cmd.Stdout, cmd.Stderr = nil, nil
	since := uptimeTicks(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the daemon's start", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "starting"))
		return err == nil
	})
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	bound := m.bound
	if bound == 0 {
		bound = 1500 * time.Millisecond
	}
	pid := cmd.Process.Pid
	cg := cgroupDir(pid)
	var left []int
	var cgLeft bool
	for {
		left = roundProcesses(m, d, uid, dir, fmt.Sprintf("CONTAIN:%d", pid), since)
		_, err := os.Stat(cg)
		cgLeft = cg != "" && err == nil
		if len(left) == 0 && !cgLeft || time.Since(killed) > bound || m.control && time.Since(killed) > 300*time.Millisecond {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(killed)
	if len(left) == 0 && !cgLeft {
		return "", took
	}
	var what []string
	for _, p := range left {
		what = append(what, fmt.Sprintf("%d (%s)", p, cmdlineOf(p)))
	}
	killWithDescendants(left)
	if cgLeft {
		what = append(what, "cgroup "+cg)
		os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
		time.Sleep(50 * time.Millisecond)
		os.Remove(cg)
	}
	return strings.Join(what, ", "), took
}

// crashBound is how long after contain's SIGKILL a round of
// TestCrashRealDaemons waits for the last process of the session to end
// before it calls it left behind. Its
// daemons end on the first SIGTERM, so an idle machine sees them gone in
// tens of milliseconds (the log says the slowest); the bound is for a
// busy one, where 1.5 s was overrun by 0.06 s beside two CPU hogs (a
// process that ended, late, not one that survived). A round that passes
// waits no longer for it.
const crashBound = 10 * time.Second

// roundProcesses lists the live processes of a round: every process of
// its own user, or, as root, those that carry its tag or name its
// directory (the cgroup holds the rest).
func roundProcesses(m crashMode, d crashDaemon, uid int, dir, value string, since uint64) []int {
	var out []int
	if !m.unpriv || d.passwd {
		// A tag names contain by PID alone, and PIDs come round within
		// seconds here: what carries it and started before this round
		// is an earlier contain's (another test's daemon, once).
		for _, p := range tagged(value) {
			if proc.StartOf(p) >= since {
				out = append(out, p)
			}
		}
	}
	byUID := m.unpriv && !d.passwd
	marker := []byte("D=" + dir + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if byUID {
			if b, err := os.ReadFile("/proc/" + e.Name() + "/status"); err == nil && realUID(b) == uid {
				out = append(out, pid)
			}
			continue
		}
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if (strings.Contains(cmdlineOf(pid), dir) || bytes.Contains(env, marker)) && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// killWithDescendants kills pids and every process they started (an
// nginx master's workers, which run as nobody under their title and carry
// no mark of the test: killed alone, the master would leave them to PID
// 1). The descendants are found first, while their parents live.
func killWithDescendants(pids []int) {
	all := slices.Clone(pids)
	for grew := true; grew; {
		grew = false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || slices.Contains(all, pid) {
				continue
			}
			if st, err := proc.ReadStat(pid, nil); err == nil && slices.Contains(all, st.PPID) {
				all, grew = append(all, pid), true
			}
		}
	}
	for _, p := range all {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// realUID reads the real user ID from /proc/PID/status (-1 if absent).
func realUID(status []byte) int {
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

// cmdlineOf is pid's command line for people.
// needTool reports whether bin is on PATH (internal/testtool's Have):
// without it the test goes on without it, naming the Debian package, where
// CI is unset, and fails in CI, whose .ci/run installs it.
func needTool(t *testing.T, bin, pkg string) bool {
	t.Helper()
	return testtool.Have(t, bin, pkg)
}

func cmdlineOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}
