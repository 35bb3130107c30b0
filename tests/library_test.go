//go:build linux

package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/testtool"
)

// Package containment, embedded in a program of another module
// (testdata/libhost, which imports it through a replace): the program is
// the host, each command it starts is held by a copy of the program.

// libraryTree is the group's command: a background job, a setsid escapee,
// and COMMAND itself.
var libraryTree = []string{"sh", "-c", "sleep 300 & setsid sleep 301 & exec sleep 302"}

var libhostFix builtOnce

// needLibhost is the host program, built once (a module of its own: go
// -C testdata/libhost).
func needLibhost(t *testing.T) string {
	t.Helper()
	return libhostFix.path(t, "libhost", filepath.Join("testdata", "libhost"), ".")
}

// hostStarted and hostClosed are the host's two JSON lines.
type hostStarted struct {
	Copy   int    `json:"copy"`
	Tag    string `json:"tag"`
	Daemon int    `json:"daemon"`
	Own    int    `json:"own"`
	Cmd    int    `json:"command"`
	Listed int    `json:"listed"`
	State  string `json:"state"`
}

type hostClosed struct {
	Reports  int    `json:"reports"`
	Ended    int    `json:"ended"`
	Wait     string `json:"wait"`
	OwnAlive bool   `json:"own_alive"`
	OwnWait  string `json:"own_wait"`
}

// host is one run of the host program.
type host struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
	marker string // in the environment of the host and of all it starts
	exited chan struct{}
}

// startHost starts the host program as root or as nobody, with tool and
// command, and a daemon when daemon is set. Everything it starts carries
// a marker in its environment, by which the test finds (and in the end
// kills) it, whatever becomes of the tag.
func startHost(t *testing.T, tool string, nobody, daemon bool, xdg string, command ...string) *host {
	t.Helper()
	return startHostEnv(t, nil, tool, nobody, daemon, xdg, command...)
}

// startHostEnv is startHost with env added to the host's environment.
func startHostEnv(t *testing.T, env []string, tool string, nobody, daemon bool, xdg string, command ...string) *host {
	t.Helper()
	return startHostIn(t, nil, env, tool, nobody, daemon, xdg, command...)
}

// startHostIn is startHostEnv with the host run by wrap (unshare, say),
// outside the switch to nobody.
func startHostIn(t *testing.T, wrap, env []string, tool string, nobody, daemon bool, xdg string, command ...string) *host {
	t.Helper()
	argv := append([]string{needLibhost(t), tool, "--"}, command...)
	if nobody {
		testtool.Need(t, "setpriv", "util-linux")
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
	}
	argv = append(wrap[:len(wrap):len(wrap)], argv...)
	h := &host{marker: fmt.Sprintf("LIBHOST_MARK=%s-%d", tool, time.Now().UnixNano()), stderr: &syncBuffer{}, exited: make(chan struct{})}
	h.cmd = exec.Command(argv[0], argv[1:]...)
	// GOGC=1: the garbage collector runs all the time in the host and its
	// copies, so that nothing the library holds is left to it by mistake
	// (a copy's pipe, collected and closed, once closed a group early).
	h.cmd.Env = append(append(os.Environ(), h.marker, "GOGC=1"), env...)
	if xdg != "" {
		h.cmd.Env = append(h.cmd.Env, "XDG_RUNTIME_DIR="+xdg)
	}
	if daemon {
		h.cmd.Env = append(h.cmd.Env, "LIBHOST_DAEMON=sleep 303")
	}
	h.cmd.Stderr = h.stderr
	// The group's processes write to the host's stderr: its Wait must
	// not wait for them.
	h.cmd.WaitDelay = time.Second
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// A pipe of the test's own, not StdoutPipe: Wait (below, at once)
	// would close that as the host exits, before its last line is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close() })
	h.cmd.Stdout = w
	h.out = bufio.NewReader(stdout)
	err = h.cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		h.cmd.Process.Kill() // through its pidfd: the PID may be another's by now
		for _, p := range h.marked() {
			syscall.Kill(p, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("the host said on stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

// line reads the host's next JSON line into v.
func (h *host) line(t *testing.T, v any) {
	t.Helper()
	type read struct {
		b   []byte
		err error
	}
	got := make(chan read, 1)
	go func() {
		b, err := h.out.ReadBytes('\n')
		got <- read{b, err}
	}()
	select {
	case r := <-got:
		if err := json.Unmarshal(r.b, v); err != nil {
			t.Fatalf("the host's line %q: %v (read: %v); its stderr:\n%s", r.b, err, r.err, h.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the host said nothing for 30 s; its stderr:\n%s", h.stderr.String())
	}
}

// marked lists the live processes that carry the host's marker.
func (h *host) marked() []int {
	want := []byte("\x00" + h.marker + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(append([]byte{0}, b...), want) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupLeft lists what is left of the host's group: every marked process
// but the host, its own child and the detached daemon.
func (h *host) groupLeft() []string {
	var left []string
	for _, p := range h.marked() {
		argv := procArgv(p)
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		switch {
		case p == h.cmd.Process.Pid:
		case len(argv) == 2 && argv[1] == "sleep": // the host's own child
		case bytes.Contains(append([]byte{0}, env...), []byte("\x00RUNNING_PROCESS_IS_DAEMON=1\x00")):
		default:
			left = append(left, fmt.Sprintf("%d %q", p, argv))
		}
	}
	return left
}

// procArgv reads pid's command line.
func procArgv(pid int) []string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func libraryUsers(t *testing.T) []bool {
	if os.Geteuid() == 0 {
		return []bool{false, true}
	}
	t.Log("not root: the host runs as this user only")
	return []bool{false}
}

func userName(nobody bool) string {
	if nobody {
		return "nobody"
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return "user"
}

// TestLibraryGroup: a host starts a group that leaves a background job
// and a setsid escapee, a detached daemon, and a child of its own outside
// the library. contain ps, and containment.Sessions in the host, list the
// group's session under the host's TOOL while it runs; Close ends the whole group (the report counts the
// three processes contain ended) and returns; the daemon lives on, marked
// and tagged; the host's own child is still running, and the host, not the
// library, waits for it.
func TestLibraryGroup(t *testing.T) {
	t.Parallel()
	for _, nobody := range libraryUsers(t) {
		t.Run(userName(nobody), func(t *testing.T) {
			t.Parallel()
			tool := "LIBG" + strings.ToUpper(userName(nobody))
			h := startHost(t, tool, nobody, true, "", libraryTree...)
			var s hostStarted
			h.line(t, &s)
			if s.Tag != fmt.Sprintf("%s:%d", tool, s.Copy) {
				t.Fatalf("the group's tag %q, want %s:<the copy's PID %d>", s.Tag, tool, s.Copy)
			}
			waitFor(t, "the group's three processes", 10*time.Second, func() bool { return len(tagged(s.Tag)) == 3 })
			ps := run(t, runOpts{}, "ps", "-o", tool, "--format", "json")
			var out struct {
				Sessions []struct {
					Originator struct{ Value string }
					State      string
					Count      int
				}
			}
			if err := json.Unmarshal([]byte(ps.stdout), &out); err != nil {
				t.Fatalf("contain ps: %v\n%s", err, ps.stdout)
			}
			found := false
			for _, se := range out.Sessions {
				if se.Originator.Value == s.Tag {
					found = true
					if se.State != "alive" || se.Count != 3 {
						t.Errorf("contain ps: session %s is %s with %d processes, want alive with 3", s.Tag, se.State, se.Count)
					}
				}
			}
			if !found {
				t.Errorf("contain ps -o %s does not list %s:\n%s", tool, s.Tag, ps.stdout)
			}
			if s.Listed != 3 || s.State != "alive" {
				t.Errorf("containment.Sessions in the host: %s %s with %d processes, want alive with 3", s.Tag, s.State, s.Listed)
			}
			if s.Daemon <= 0 || !alive(s.Daemon) {
				t.Fatalf("the detached daemon %d is not running", s.Daemon)
			}
			env := environOf(t, s.Daemon)
			if env["RUNNING_PROCESS_IS_DAEMON"] != "1" || !strings.HasPrefix(env["RUNNING_PROCESS_ORIGINATOR"], tool+":") {
				t.Errorf("the daemon's environment: RUNNING_PROCESS_IS_DAEMON=%q RUNNING_PROCESS_ORIGINATOR=%q", env["RUNNING_PROCESS_IS_DAEMON"], env["RUNNING_PROCESS_ORIGINATOR"])
			}

			fmt.Fprintln(h.stdin, "close")
			var c hostClosed
			h.line(t, &c)
			if left := h.groupLeft(); len(left) > 0 {
				t.Errorf("Close returned with the group still there: %v", left)
			}
			if c.Reports != 1 || c.Ended < 3 {
				t.Errorf("Close gave %d report(s) saying contain ended %d process(es), want 1 saying 3", c.Reports, c.Ended)
			}
			if c.Wait != "signal: terminated" {
				t.Errorf("the group's cmd.Wait: %q, want COMMAND's own end, signal: terminated", c.Wait)
			}
			if !c.OwnAlive || c.OwnWait != "signal: killed" {
				t.Errorf("the host's own child: alive after Close %v, its Wait %q; want alive, and signal: killed once the host killed it", c.OwnAlive, c.OwnWait)
			}
			if !alive(s.Daemon) {
				t.Errorf("the detached daemon %d did not outlive the group", s.Daemon)
			}
		})
	}
}

// TestLibraryUntaggedCommand: a command whose environment shows no tag
// from its start (env -i, as a program that writes its title over its
// environment would show) is still the session's, and Close ends it: as
// root the holder's cgroup holds it, and the program tells the holder of
// it; as nobody its own copy holds it, as contain run holds COMMAND.
// (While nobody's Group was a held session too, this failed without the
// program's word to the holder, frameMember.)
func TestLibraryUntaggedCommand(t *testing.T) {
	t.Parallel()
	for _, nobody := range libraryUsers(t) {
		t.Run(userName(nobody), func(t *testing.T) {
			t.Parallel()
			tool := "LIBU" + strings.ToUpper(userName(nobody))
			// It shows no tag: Sessions lists none.
			h := startHostEnv(t, []string{"LIBHOST_LISTED=0"}, tool, nobody, false, "", "env", "-i", "sleep", "305")
			var s hostStarted
			h.line(t, &s)
			if s.Cmd <= 0 || !alive(s.Cmd) {
				t.Fatalf("the command %d is not running", s.Cmd)
			}
			waitFor(t, "the command's exec of sleep", 10*time.Second, func() bool {
				return len(procArgv(s.Cmd)) > 0 && procArgv(s.Cmd)[0] == "sleep"
			})
			if env := environOf(t, s.Cmd); env["RUNNING_PROCESS_ORIGINATOR"] != "" {
				t.Fatalf("env -i left the tag: %v", env)
			}
			t.Cleanup(func() { syscall.Kill(s.Cmd, syscall.SIGKILL) })
			fmt.Fprintln(h.stdin, "close")
			var c hostClosed
			h.line(t, &c)
			if alive(s.Cmd) {
				t.Errorf("Close returned with the untagged command %d running", s.Cmd)
			}
			if c.Wait != "signal: terminated" {
				t.Errorf("the command's cmd.Wait: %q, want signal: terminated", c.Wait)
			}
		})
	}
}

// TestLibraryInPIDNamespace: a Group in a PID namespace of its own, its
// host the namespace's init (unshare --pid --fork): the group's session is
// listed by the host's contain ps from outside, and Close ends all of it,
// the setsid escapee included, as root and as nobody.
func TestLibraryInPIDNamespace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	testtool.Need(t, "unshare", "util-linux")
	for _, nobody := range libraryUsers(t) {
		t.Run(userName(nobody), func(t *testing.T) {
			t.Parallel()
			tool := "LIBNS" + strings.ToUpper(userName(nobody))
			h := startHostIn(t, []string{"unshare", "--pid", "--fork", "--mount-proc"}, nil, tool, nobody, false, "", libraryTree...)
			var s hostStarted
			h.line(t, &s)
			if s.Listed != 3 || s.State != "alive" {
				t.Errorf("containment.Sessions in the namespace: %s %s with %d processes, want alive with 3", s.Tag, s.State, s.Listed)
			}
			waitFor(t, "the group's three processes", 10*time.Second, func() bool { return len(h.marked()) >= 5 })
			ps := run(t, runOpts{}, "ps", "-o", tool)
			if !strings.Contains(ps.stdout, tool+":") || !strings.Contains(ps.stdout, "sleep") {
				t.Errorf("the host's contain ps -o %s does not list the namespace's session:\n%s%s", tool, ps.stdout, ps.stderr)
			}
			fmt.Fprintln(h.stdin, "close")
			var c hostClosed
			h.line(t, &c)
			// The host is unshare's child, the namespace's init: it may be
			// exiting now, its command line already gone.
			var left []string
			for _, p := range h.marked() {
				if st, err := proc.ReadStat(p, nil); p != h.cmd.Process.Pid && (err != nil || st.PPID != h.cmd.Process.Pid) {
					left = append(left, fmt.Sprintf("%d %q", p, procArgv(p)))
				}
			}
			if len(left) > 0 {
				t.Errorf("Close returned with the group still there: %v", left)
			}
			if c.Wait != "signal: terminated" {
				t.Errorf("the command's cmd.Wait: %q, want signal: terminated", c.Wait)
			}
		})
	}
}

// TestLibraryHostKilled: the host killed with SIGKILL at many moments,
// from before its copy has started COMMAND to well after: nothing of the
// group survives it (the copy sees its pipe close and closes the group;
// the guard covers the copy), the daemon started detached does, and so
// does the host's own child, which is the host's affair.
func TestLibraryHostKilled(t *testing.T) {
	t.Parallel()
	// Milliseconds after the host started; -1: once the group's three
	// processes run.
	delays := []int{0, 3, 8, 15, 30, 60, 120, 250, -1}
	for _, nobody := range libraryUsers(t) {
		for i, d := range delays {
			name := fmt.Sprintf("%s/%dms", userName(nobody), d)
			if d < 0 {
				name = userName(nobody) + "/running"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tool := fmt.Sprintf("LIBK%d%s", i, strings.ToUpper(userName(nobody)))
				h := startHost(t, tool, nobody, true, "", libraryTree...)
				if d >= 0 {
					time.Sleep(time.Duration(d) * time.Millisecond)
				} else {
					var s hostStarted
					h.line(t, &s)
					waitFor(t, "the group's three processes", 10*time.Second, func() bool { return len(tagged(s.Tag)) == 3 })
				}
				syscall.Kill(h.cmd.Process.Pid, syscall.SIGKILL)
				<-h.exited
				// The copy closes the group as contain run does when told
				// to stop: SIGTERM, then SIGKILL after the 1 s grace.
				deadline := time.Now().Add(5 * time.Second)
				var left []string
				for {
					if left = h.groupLeft(); len(left) == 0 || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if len(left) > 0 {
					t.Errorf("killed %s, the host left %v", name, left)
				}
			})
		}
	}
}

// TestLibraryReap: host, copy, crash guard and shim all killed at once
// (stopped, then killed): what is left of the group is the session's
// orphans, and containment.Reap of the session (contain reap --session as
// a function, run by the host program as the host's user) ends them.
func TestLibraryReap(t *testing.T) {
	t.Parallel()
	for _, nobody := range libraryUsers(t) {
		t.Run(userName(nobody), func(t *testing.T) {
			t.Parallel()
			tool := "LIBR" + strings.ToUpper(userName(nobody))
			xdg := ""
			if nobody {
				xdg, _ = registryDir(t, true)
			}
			h := startHost(t, tool, nobody, false, xdg, libraryTree...)
			var s hostStarted
			h.line(t, &s)
			waitFor(t, "the group's three processes", 10*time.Second, func() bool { return len(tagged(s.Tag)) == 3 })
			// The host, its copy, and the copy's children that are not
			// the group's: the crash guard (as root a shell that waits to
			// become it) and, without a cgroup, the shim.
			killed := []int{h.cmd.Process.Pid, s.Copy}
			group := tagged(s.Tag)
			for _, p := range childrenOf(s.Copy) {
				if !slices.Contains(group, p) {
					killed = append(killed, p)
				}
			}
			if len(killed) < 3 {
				t.Fatalf("found no guard or shim beside the host and its copy: %v", killed)
			}
			var argvs []string
			for _, p := range killed {
				argvs = append(argvs, fmt.Sprintf("%d %q", p, procArgv(p)))
			}
			// All stopped first, then killed, the host last: the copy,
			// guard and shim are in the host's process group, and the
			// host's end would orphan that group while they are stopped,
			// so the kernel would send them SIGHUP and SIGCONT, and the
			// copy, running again, would forward the SIGHUP to what is
			// left (the test then found nothing to reap, under load).
			for _, p := range killed {
				syscall.Kill(p, syscall.SIGSTOP)
			}
			for _, p := range slices.Backward(killed) {
				syscall.Kill(p, syscall.SIGKILL)
			}
			waitFor(t, "host, copy, guard and shim to be gone", 5*time.Second, func() bool {
				return !slices.ContainsFunc(killed, alive)
			})
			// COMMAND ends of its Pdeathsig (the shim's, or the copy's
			// thread) a moment after: what is left is what stays 200ms.
			var orphans []int
			for deadline, since := time.Now().Add(5*time.Second), time.Now(); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if now := tagged(s.Tag); !slices.Equal(now, orphans) {
					orphans, since = now, time.Now()
				} else if time.Since(since) >= 200*time.Millisecond {
					break
				}
			}
			if len(orphans) == 0 {
				t.Fatalf("nothing of %s was left to reap: the test proves nothing (killed %v: %s)", s.Tag, killed, argvs)
			}
			// containment.Reap, in the host program as the host's user.
			argv := []string{needLibhost(t), "reap", s.Tag}
			if nobody {
				argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
			}
			reaper := exec.Command(argv[0], argv[1:]...)
			reaper.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+xdg)
			if xdg == "" {
				reaper.Env = os.Environ()
			}
			out, err := reaper.CombinedOutput()
			if err != nil {
				t.Fatalf("containment.Reap: %v\n%s", err, out)
			}
			var reaped struct {
				Processes []struct {
					PID    int
					Result string
					Failed bool
				}
			}
			if err := json.Unmarshal(out, &reaped); err != nil {
				t.Fatalf("containment.Reap's result: %v\n%s", err, out)
			}
			ended := 0
			for _, p := range reaped.Processes {
				if slices.Contains(orphans, p.PID) && !p.Failed {
					ended++
				}
			}
			if ended != len(orphans) {
				t.Errorf("containment.Reap ended %d of the orphans %v: %s", ended, orphans, out)
			}
			waitFor(t, "the orphans to be gone", 5*time.Second, func() bool { return len(tagged(s.Tag)) == 0 })
		})
	}
}

// TestLibraryRealDaemons: real daemons started by a Group's command, as
// root, as nobody, as nobody in a cgroup delegated to it (as systemd
// delegates a user's own cgroups), and as root of nobody's user namespace
// there (a rootless container's root): redis and nginx double-fork and write
// their titles over their environments, memcached, ssh-agent, gpg-agent,
// tmux, setsid -f, nohup and an env -i double fork leave their command's
// tree and process group. Close ends every one of them. As root and in
// the delegated cgroup, the Group holds one session for its
// commands, in a cgroup (Tag names the holder; the command is the
// program's own child, born in the session's cgroup); as nobody with no
// cgroup, each command is held by a copy of its own, with the shim.
func TestLibraryRealDaemons(t *testing.T) {
	t.Parallel()
	type way struct {
		name      string
		nobody    bool
		delegated string // the cgroup the host starts in, made for nobody
		userns    bool   // and as root of a user namespace of nobody's there
	}
	ways := []way{{name: userName(false)}}
	if os.Geteuid() == 0 {
		cg := delegatedCgroup(t, 65534)
		ways = append(ways, way{name: "nobody", nobody: true}, way{name: "nobody-delegated", nobody: true, delegated: cg},
			way{name: "userns-delegated", nobody: true, delegated: cg, userns: true})
	}
	for _, w := range ways {
		for i, d := range crashDaemons {
			if d.passwd {
				continue // needs its user in the password database
			}
			t.Run(w.name+"/"+d.name, func(t *testing.T) {
				if !needTool(t, d.bin, d.pkg) {
					return
				}
				t.Parallel()
				dir := sharedDir(t)
				env := []string{"D=" + dir, "HOME=" + dir, "XDG_RUNTIME_DIR=" + dir, "LIBHOST_LISTED=0"}
				if w.nobody {
					if err := os.Chown(dir, 65534, 65534); err != nil {
						t.Fatal(err)
					}
				} else {
					env = append(env, "ROOT=1")
				}
				var wrap []string
				if w.delegated != "" {
					wrap = []string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, w.delegated}
				}
				asNobody := w.nobody
				if w.userns {
					// a rootless container's root: nobody outside, 0 inside
					testtool.Need(t, "setpriv", "util-linux")
					testtool.Need(t, "unshare", "util-linux")
					wrap = append(wrap, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "unshare", "--user", "--map-root-user", "--")
					asNobody = false
				}
				tool := fmt.Sprintf("LIBD%d%s", i, strings.ToUpper(strings.ReplaceAll(w.name, "-", "")))
				since := uptimeTicks(t)
				h := startHostIn(t, wrap, env, tool, asNobody, false, "", "sh", "-c", d.start+"; : > $D/started; exec sleep 300")
				var s hostStarted
				h.line(t, &s)
				if held := ppidOf(s.Cmd) == h.cmd.Process.Pid; held != (w.delegated != "" || !w.nobody) {
					t.Errorf("the command %d is the program's own child: %v (parent %d, program %d)", s.Cmd, held, ppidOf(s.Cmd), h.cmd.Process.Pid)
				}
				if w.delegated != "" {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.Cmd))
					if want := fmt.Sprintf("/contain-%d\n", s.Copy); !strings.Contains(string(b), filepath.Base(w.delegated)+want) {
						t.Errorf("the command %d is not in its holder's cgroup below %s: %s", s.Cmd, w.delegated, b)
					}
				}
				waitFor(t, "the daemon's start", 10*time.Second, func() bool {
					_, err := os.Stat(filepath.Join(dir, "started"))
					return err == nil
				})
				time.Sleep(300 * time.Millisecond) // the daemon's last fork
				mode := crashMode{}
				before := roundProcesses(mode, d, 0, dir, s.Tag, since)
				fmt.Fprintln(h.stdin, "close")
				var c hostClosed
				h.line(t, &c)
				select {
				case <-h.exited:
				case <-time.After(10 * time.Second):
					t.Fatal("the host did not exit after Close")
				}
				var left []int
				for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if left = roundProcesses(mode, d, 0, dir, s.Tag, since); len(left) == 0 || time.Now().After(deadline) {
						break
					}
				}
				if len(left) > 0 {
					var what []string
					for _, p := range left {
						what = append(what, fmt.Sprintf("%d (%s)", p, cmdlineOf(p)))
					}
					killWithDescendants(left)
					t.Errorf("Close left %s (before it: %d processes)", strings.Join(what, ", "), len(before))
				}
			})
		}
	}
}

// delegatedCgroup is testtool.DelegatedCgroup for a test: it fails the
// test where none can be made (the tests run as root, on a writable
// cgroup v2 hierarchy: CI's machine is one).
func delegatedCgroup(t *testing.T, uid int) string {
	t.Helper()
	dir, err := testtool.DelegatedCgroup(t, "contain-test-delegated", uid)
	if err != nil {
		t.Fatalf("cannot make a cgroup to delegate: %v", err)
	}
	return dir
}
