//go:build linux

package tests

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// The attacks of docs/SECURITY.md's "environment" and "hidden entries":
// a job's variables in cmd.Env must not steer the library's copy; the
// copy, the crash guard and the shim do nothing when another user starts
// them; nothing of contain runs set-user-ID, set-group-ID or with file
// capabilities (AT_SECURE).

// refusedStatus is the exit status of every refusal (internal/entry).
const refusedStatus = 122

// secureLine is what contain says where AT_SECURE is set.
const secureLine = "contain: refusing to run: this program is set-user-ID, set-group-ID or has file capabilities (AT_SECURE), and contain acts only with the rights of the user who runs it\n"

// disableLine matches contain run's word that CONTAIN_DISABLE turns
// layers off.
const disableLinePrefix = "contain: CONTAIN_DISABLE turns off "

// withoutDisableLines drops, from what contain wrote to stderr, the lines
// by which it says that CONTAIN_DISABLE turns layers off: the tests that
// run with some layers off compare the rest (TestDisableSaid checks them).
func withoutDisableLines(s string) string {
	if !strings.Contains(s, disableLinePrefix) {
		return s
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, disableLinePrefix) {
			b.WriteString(l)
		}
	}
	return b.String()
}

var envhostFix builtOnce

// needEnvhost is tests/testdata/envhost: a host that passes a job's
// variables in cmd.Env, as a CI agent does.
func needEnvhost(t *testing.T) string {
	t.Helper()
	return envhostFix.path(t, "envhost", filepath.Join("testdata", "envhost"), ".")
}

// allLayers turns off every layer CONTAIN_DISABLE knows.
const allLayers = "CONTAIN_DISABLE=cgroup,subreaper,shim,pdeathsig,systemd,waiter,keeper,spawn"

// TestSecurityJobEnvironment: a host (root's CI agent, or nobody's) runs
// a job with the job's variables in cmd.Env: CONTAIN_REPORT naming a file
// of root's, CONTAIN_DISABLE naming every layer, CONTAIN_ORIGINATOR. The
// job leaves ten fast double-forked escapees. The variables reach the
// job, unchanged; the copy takes none of them: the file is untouched,
// the tag is the host's TOOL, and Close ends every escapee.
func TestSecurityJobEnvironment(t *testing.T) {
	t.Parallel()
	for _, nobody := range libraryUsers(t) {
		t.Run(userName(nobody), func(t *testing.T) {
			t.Parallel()
			host := needEnvhost(t)
			dir := sharedDir(t)
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("root's secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var before syscall.Stat_t
			if err := syscall.Stat(victim, &before); err != nil {
				t.Fatal(err)
			}
			tool := uniqueTool(t)
			job := []string{"CONTAIN_REPORT=" + victim, allLayers, "CONTAIN_ORIGINATOR=EVIL"}
			script := `env > "$0/seen"
for i in 1 2 3 4 5 6 7 8 9 10; do sh -c 'setsid sleep 300 & echo $! >> "$0/escapees"' "$0" & done
wait
echo >> "$0/ready"
exec sleep 300`
			argv := append(append([]string{host, tool}, job...), "--", "sh", "-c", script, dir)
			if nobody {
				testtool.Need(t, "setpriv", "util-linux")
				argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = withoutTag(os.Environ())
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			cmd.WaitDelay = 5 * time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || lines.Text() != "started" {
				t.Fatalf("the host did not start the job; stderr:\n%s", stderr.String())
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the job did not start its escapees within 20 s; the host said:\n%s", stderr.String())
				}
			}
			var escapees []int
			b, _ := os.ReadFile(filepath.Join(dir, "escapees"))
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				escapees = append(escapees, pid)
				killOnCleanup(t, pid)
			}
			if len(escapees) != 10 {
				t.Fatalf("%d escapees started, want 10: %q", len(escapees), b)
			}
			seen, _ := os.ReadFile(filepath.Join(dir, "seen"))
			for _, v := range append(job, "RUNNING_PROCESS_ORIGINATOR="+tool+":") {
				if !strings.Contains(string(seen), "\n"+v) && !strings.HasPrefix(string(seen), v) {
					t.Errorf("the job's environment lacks %s:\n%s", v, seen)
				}
			}
			fmt.Fprintln(stdin, "close")
			if !lines.Scan() || lines.Text() != "closed" {
				t.Fatalf("the host did not close the group; stderr:\n%s", stderr.String())
			}
			var left []int
			for _, pid := range escapees {
				if alive(pid) {
					left = append(left, pid)
				}
			}
			if len(left) > 0 {
				t.Errorf("%d of 10 escapees survived Close: %v", len(left), left)
			}
			var after syscall.Stat_t
			got, err := os.ReadFile(victim)
			if err := syscall.Stat(victim, &after); err != nil || string(got) != "root's secret\n" || after.Ino != before.Ino || after.Uid != 0 || after.Mode&0o777 != 0o600 {
				t.Errorf("the job's CONTAIN_REPORT reached the copy: %s now holds %q (inode %d, was %d; uid %d, mode %o): %v", victim, got, after.Ino, before.Ino, after.Uid, after.Mode&0o777, err)
			}
			if strings.Contains(stderr.String(), disableLinePrefix) {
				t.Errorf("the copy took the job's CONTAIN_DISABLE:\n%s", stderr.String())
			}
		})
	}
}

// TestDisableSaid: CONTAIN_DISABLE, the tests' switch, is never honoured
// silently: contain run says without -v which layers it turns off; a
// value that names none says nothing.
func TestDisableSaid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ value, line string }{
		{"cgroup,subreaper", disableLinePrefix + "cgroup, subreaper: a switch for contain's tests; what COMMAND starts may outlive it\n"},
		{"macos", disableLinePrefix + "cgroup, subreaper, shim, pdeathsig, waiter, spawn: a switch for contain's tests; what COMMAND starts may outlive it\n"},
		{"nothing-known", ""},
	} {
		cmd := containCmd(runOpts{env: []string{"CONTAIN_DISABLE=" + c.value}}, "run", "--", "true")
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != c.line {
			t.Errorf("CONTAIN_DISABLE=%s: %v, said %q; want %q", c.value, err, out, c.line)
		}
	}
}

// strangersPipe makes a pipe as user uid would: its maker, as the kernel
// records it, is uid (the file system uid of this thread, for the call).
func strangersPipe(t *testing.T, uid int) (r, w *os.File) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Setfsuid(uid)
	var p [2]int
	err := unix.Pipe2(p[:], unix.O_CLOEXEC)
	unix.Setfsuid(0)
	if got, _ := unix.SetfsuidRetUid(-1); got != 0 {
		t.Fatalf("the thread's file system uid is %d after the pipe", got)
	}
	if err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	var st unix.Stat_t
	if err := unix.Fstat(p[0], &st); err != nil || int(st.Uid) != uid {
		t.Fatalf("the stranger's pipe is uid %d's: %v", st.Uid, err)
	}
	return r, w
}

// hiddenEntry runs path with args, the descriptors files (3, 4, ...) and
// stdin (nil: none), and returns its status and stderr.
func hiddenEntry(t *testing.T, env []string, stdin io.Reader, files []*os.File, path string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(withoutTag(os.Environ()), env...)
	cmd.ExtraFiles = files
	cmd.Stdin = stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		f.Close()
	}
	if f, ok := stdin.(*os.File); ok {
		f.Close()
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not end", path, args)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// copySpec frames a Spec for the command args as a Group frames its
// copy's (package containment, wire.go and codec.go): the kind, the
// length, the version, then the fields: args (tag 1, each item with its
// length) and a grace of 2 s (tag 7, a varint).
func copySpec(args ...string) []byte {
	var list []byte
	for _, a := range args {
		list = append(binary.AppendUvarint(list, uint64(len(a))), a...)
	}
	b := append([]byte("contain-spec-4\x00"), 1)
	b = append(binary.AppendUvarint(b, uint64(len(list))), list...)
	grace := binary.AppendVarint(nil, int64(2*time.Second))
	b = append(append(append(b, 7), byte(len(grace))), grace...)
	return append(binary.BigEndian.AppendUint32([]byte{'C'}, uint32(len(b))), b...)
}

// TestSecurityHiddenEntries: another user runs contain's hidden entries,
// or a program's that links package containment (libhost), with
// descriptors of their own making, as a privileged program that passes
// them on (sudo -C, a service) would hand them over: the crash guard with
// orders naming a session of root's (or, run as nobody on daemon's pipe,
// of nobody's), the shim with orders to run a
// command, the copy with orders to run one. Each refuses in one line,
// with status 122, having done nothing: the session lives, no command
// ran. With no descriptors at all, the same. The same orders on pipes
// root made do what they say (the control).
func TestSecurityHiddenEntries(t *testing.T) {
	t.Parallel()
	requireRoot(t, "pipes of another user's making")
	host := needLibhost(t)
	dir := sharedDir(t)
	const stranger = 65534
	for _, prog := range []string{bin, host} {
		name := filepath.Base(prog)
		t.Run(name+"/guard", func(t *testing.T) {
			// The orders on fd 3, a stranger's pipe; or on standard input,
			// a stranger's pipe, beside a pipe of root's as fd 3.
			for _, viaStdin := range []bool{false, true} {
				gone := deadPID(t)
				value := fmt.Sprintf("%s:%d", uniqueTool(t), gone)
				victim := startTagged(t, value, procOpts{})
				orders := fmt.Sprintf("session %s 300ms false\ncomm\n", value)
				r, w := strangersPipe(t, stranger)
				w.WriteString(orders)
				w.Close()
				args, files, bad := []string{"__guard", strconv.Itoa(gone)}, []*os.File{r}, 3
				var stdin io.Reader
				if viaStdin {
					own, ownW, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					ownW.Close()
					args, files, stdin, bad = append(args, "-"), []*os.File{own}, r, 0
				}
				code, stderr := hiddenEntry(t, nil, stdin, files, prog, args...)
				if code != refusedStatus || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, fmt.Sprintf("contain: the crash guard refused to run: descriptor %d was made by uid 65534", bad)) {
					t.Errorf("%q, orders on stdin %v: status %d, stderr %q; want %d and one line", args, viaStdin, code, stderr, refusedStatus)
				}
				if !alive(victim) {
					t.Errorf("%q, orders on stdin %v: the guard ended %d of session %s", args, viaStdin, victim, value)
				}
			}
		})
		t.Run(name+"/guard as nobody", func(t *testing.T) {
			// nobody's guard, on a pipe that daemon (uid 1) made, with
			// orders naming a session of nobody's.
			testtool.Need(t, "setpriv", "util-linux")
			gone := deadPID(t)
			value := fmt.Sprintf("%s:%d", uniqueTool(t), gone)
			victim := startTagged(t, value, procOpts{nobody: true})
			r, w := strangersPipe(t, 1)
			fmt.Fprintf(w, "session %s 300ms false\ncomm\n", value)
			w.Close()
			code, stderr := hiddenEntry(t, nil, nil, []*os.File{r}, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", prog, "__guard", strconv.Itoa(gone))
			if code != refusedStatus || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "contain: the crash guard refused to run: descriptor 3 was made by uid 1, not by this user (uid 65534) or root") {
				t.Errorf("status %d, stderr %q; want %d and one line", code, stderr, refusedStatus)
			}
			if !alive(victim) {
				t.Errorf("nobody's guard ended %d of session %s on daemon's orders", victim, value)
			}
		})
		t.Run(name+"/shim", func(t *testing.T) {
			marker := filepath.Join(dir, name+"-shim")
			orders, _ := json.Marshal(map[string]any{"path": "/bin/sh", "argv": []string{"sh", "-c", "touch " + marker}, "env": []string{}})
			or, ow := strangersPipe(t, stranger)
			sr, sw := strangersPipe(t, stranger)
			ow.Write(append(orders, '\n'))
			ow.Close()
			defer sr.Close()
			code, stderr := hiddenEntry(t, nil, nil, []*os.File{or, sw}, prog, "__shim", "3")
			if code != refusedStatus || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "contain: the shim refused to run: descriptor 3 was made by uid 65534") {
				t.Errorf("status %d, stderr %q; want %d and one line", code, stderr, refusedStatus)
			}
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(marker); err == nil {
				t.Error("the shim ran the stranger's command")
			}
		})
		t.Run(name+"/copy", func(t *testing.T) {
			for _, own := range []bool{false, true} {
				marker := filepath.Join(dir, fmt.Sprintf("%s-copy-%v", name, own))
				pipe := func() (*os.File, *os.File) {
					if own {
						r, w, err := os.Pipe()
						if err != nil {
							t.Fatal(err)
						}
						return r, w
					}
					return strangersPipe(t, stranger)
				}
				sr, sw := pipe()
				or, ow := pipe()
				argv := []string{"__contain_group", "run", "--", "touch", marker}
				sw.Write(copySpec(argv[3:]...))
				defer sw.Close()
				go io.Copy(io.Discard, or)
				code, stderr := hiddenEntry(t, []string{"CONTAIN_GROUP_PIPES=3,4"}, nil, []*os.File{sr, ow}, prog, argv...)
				_, err := os.Stat(marker)
				switch {
				case own && (code != 0 || err != nil):
					t.Errorf("on pipes of its own user's: status %d, %v; stderr %q", code, err, stderr)
				case !own && (code != refusedStatus || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "contain: this copy of the program (package containment) refused to run: descriptor 3 was made by uid 65534")):
					t.Errorf("status %d, stderr %q; want %d and one line", code, stderr, refusedStatus)
				case !own && err == nil:
					t.Error("the copy ran the stranger's command")
				}
			}
		})
	}
	// No descriptors at all: argv[1] alone, as another user would type it
	// (or a privileged program would pass it on, closing the rest).
	marker := filepath.Join(dir, "bare")
	for _, c := range [][]string{
		{bin, "__guard", "1", "-"},
		{bin, "__shim", "3"},
		{bin, "__shim", "keeper", "3"},
		{host, "__guard", "1", "-"},
		{host, "__contain_group", "run", "--", "touch", marker},
	} {
		code, stderr := hiddenEntry(t, []string{"CONTAIN_GROUP_PIPES=3,4"}, strings.NewReader("session X:1 1s false\n"), nil, c[0], c[1:]...)
		if code != refusedStatus || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, " refused to run: ") {
			t.Errorf("%q: status %d, stderr %q; want %d and one line", c, code, stderr, refusedStatus)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the copy ran a command without its pipes")
	}
}

// TestSecuritySetuid: contain, and a program that links package
// containment, made set-user-ID root, set-group-ID root, or given a file
// capability, and run by nobody: each refuses at once, whatever it is
// asked (contain --version, contain run, a hidden entry, the host's own
// work), with one line and status 122.
func TestSecuritySetuid(t *testing.T) {
	t.Parallel()
	requireRoot(t, "set-user-ID root")
	testtool.Need(t, "setpriv", "util-linux")
	host := needLibhost(t)
	dir := sharedDir(t)
	marker := filepath.Join(dir, "ran")
	type mode struct {
		name  string
		apply func(path string) error
	}
	modes := []mode{
		{"setuid", func(p string) error { return syscall.Chmod(p, 0o4755) }},
		{"setgid", func(p string) error { return syscall.Chmod(p, 0o2755) }},
	}
	if setcap, err := exec.LookPath("setcap"); err == nil {
		modes = append(modes, mode{"file capability", func(p string) error {
			if out, err := exec.Command(setcap, "cap_kill+ep", p).CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}})
	} else {
		t.Log("no setcap (Debian: libcap2-bin): file capabilities not tried")
	}
	for _, m := range modes {
		for _, prog := range []string{bin, host} {
			path := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "-")+"-"+filepath.Base(prog))
			// Copied by cp: a file this process had open for writing,
			// inherited by a fork of another test's, could not be
			// executed (ETXTBSY).
			if out, err := exec.Command("cp", prog, path).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			if err := m.apply(path); err != nil {
				t.Fatal(err)
			}
			var cases [][]string
			if prog == bin {
				cases = [][]string{{"--version"}, {"run", "--", "touch", marker}, {"__guard", "1", "-"}, {"ps"}}
			} else {
				cases = [][]string{{"T", "--", "touch", marker}, {"__contain_group", "run", "--", "touch", marker}}
			}
			for _, args := range cases {
				argv := append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", path}, args...)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = append(withoutTag(os.Environ()), "CONTAIN_GROUP_PIPES=3,4")
				cmd.Stdin = strings.NewReader("close\n")
				out, err := cmd.CombinedOutput()
				if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != refusedStatus || string(out) != secureLine {
					t.Errorf("%s %s %q as nobody: %v, said %q; want status %d and %q", m.name, filepath.Base(prog), args, err, out, refusedStatus, secureLine)
				}
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a set-user-ID program ran a command")
	}
}
