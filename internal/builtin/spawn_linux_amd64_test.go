package builtin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spawnOutput spawns prog (a path, opened and handed as descriptor 20)
// with argv, its stdout a pipe moved to 1 and the extra moves, from a
// thread whose mask blocks SIGUSR2 and SIGWINCH; it returns what the
// program wrote, its exit status and Executed's error.
func spawnOutput(t *testing.T, prog string, argv []string, setsid bool, extra ...Move) (string, unix.WaitStatus, error) {
	t.Helper()
	f, err := os.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[0] = 1<<(unix.SIGUSR2-1) | 1<<(unix.SIGWINCH-1)
	unix.PthreadSigmask(unix.SIG_SETMASK, &set, &old)
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	moves := append([]Move{{int(w.Fd()), 1}, {int(f.Fd()), 20}}, extra...)
	c, err := Spawn(Spec{Argv: argv, Env: []string{"LC_ALL=C", "A=b"}, Moves: moves, Prog: 20, Setsid: setsid})
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	var now unix.Sigset_t
	unix.PthreadSigmask(unix.SIG_SETMASK, nil, &now)
	if now != set {
		t.Errorf("the thread's mask after Spawn: %x, want %x as before", now.Val[0], set.Val[0])
	}
	execErr := c.Executed()
	out, _ := io.ReadAll(r)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(c.Pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	return string(out), ws, execErr
}

func statusField(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// needSpawn skips a test where the kernel cannot Spawn (before Linux 5.5,
// or a seccomp filter that refuses clone3).
func needSpawn(t *testing.T) {
	t.Helper()
	f, err := os.Open("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Spawn(Spec{Argv: []string{"true"}, Moves: []Move{{int(f.Fd()), 20}}, Prog: 20, Setsid: true})
	if errors.Is(err, ErrNoSpawn) {
		t.Skipf("this kernel: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Executed()
	unix.Wait4(c.Pid, nil, 0, nil)
}

// TestSpawn: the child executes the program from its descriptor with its
// argv and environment, in a session of its own (or a process group),
// with no handler and the cloning thread's signal mask, its descriptors
// moved into place, and none of contain's that it was not given.
func TestSpawn(t *testing.T) {
	needSpawn(t)
	// A descriptor of the test's own, close-on-exec, that the child must
	// not have; and one inherited open (not close-on-exec), that it keeps.
	cloexec, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer cloexec.Close()
	open, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(open)
	for _, setsid := range []bool{true, false} {
		out, ws, err := spawnOutput(t, "/bin/cat", []string{"cat", "/proc/self/status", "/proc/self/stat", "/proc/self/environ"}, setsid)
		if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
			t.Fatalf("setsid %v: executed %v, status %v: %s", setsid, err, ws, out)
		}
		if got, want := statusField(out, "SigBlk"), fmt.Sprintf("%016x", 1<<(unix.SIGUSR2-1)|1<<(unix.SIGWINCH-1)); got != want {
			t.Errorf("setsid %v: blocked %s, want the thread's (USR2, WINCH): %s", setsid, got, want)
		}
		if got := statusField(out, "SigCgt"); got != "0000000000000000" {
			t.Errorf("setsid %v: caught %s, want none", setsid, got)
		}
		pid := statusField(out, "Pid")
		i := strings.Index(out, pid+" (cat) ")
		if i < 0 {
			t.Fatalf("no stat line in %q", out)
		}
		f := strings.Fields(out[i:])
		pgrp, sid := f[4], f[5]
		if setsid && (sid != pid || pgrp != pid) {
			t.Errorf("session %s, process group %s; want its own, %s", sid, pgrp, pid)
		}
		if !setsid && (sid == pid || pgrp != pid) {
			t.Errorf("session %s, process group %s; want contain's session and its own group %s", sid, pgrp, pid)
		}
		if !strings.Contains(out, "LC_ALL=C\x00A=b\x00") {
			t.Errorf("environment not in %q", out)
		}
	}
	// The descriptors: 1 the pipe, 20 the program; the test's binary to
	// 21 from a number that /dev/null takes (a source that is another
	// move's destination); the inherited one kept; a close-on-exec one
	// not given gone.
	other, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	gone, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	out, ws, err := spawnOutput(t, "/bin/ls", []string{"ls", "-l", "/proc/self/fd/"}, true,
		Move{int(cloexec.Fd()), int(other.Fd())}, Move{int(other.Fd()), 21})
	if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("executed %v, status %v: %s", err, ws, out)
	}
	fds := map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[len(f)-2] == "->" {
			n, _ := strconv.Atoi(f[len(f)-3])
			fds[n] = f[len(f)-1]
		}
	}
	exe, _ := os.Readlink("/proc/self/exe")
	if fds[21] != exe || fds[20] != "/bin/ls" && fds[20] != "/usr/bin/ls" || !strings.HasPrefix(fds[1], "pipe:") {
		t.Errorf("descriptors %v: want 1 a pipe, 20 ls, 21 %s", fds, exe)
	}
	if fds[int(other.Fd())] != os.DevNull {
		t.Errorf("descriptor %d is not /dev/null: %v", other.Fd(), fds)
	}
	if fds[open] != os.DevNull {
		t.Errorf("the inherited descriptor %d is not kept: %v", open, fds)
	}
	if _, ok := fds[int(gone.Fd())]; ok {
		t.Errorf("the close-on-exec %d reached the child: %v", gone.Fd(), fds)
	}
}

// TestSpawnFails: a program the kernel will not execute is reported by
// Executed, and the child exits 127.
func TestSpawnFails(t *testing.T) {
	needSpawn(t)
	script := t.TempDir() + "/noexec"
	if err := os.WriteFile(script, []byte("echo no interpreter line\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, ws, err := spawnOutput(t, script, []string{"noexec"}, true)
	if !errors.Is(err, syscall.ENOEXEC) || !ws.Exited() || ws.ExitStatus() != 127 {
		t.Errorf("executed %v, status %v; want ENOEXEC and 127", err, ws)
	}
	// A descriptor that is not open: dup3 fails in the child.
	_, ws, err = spawnOutput(t, "/bin/true", []string{"true"}, true, Move{1 << 19, 4})
	if !errors.Is(err, syscall.EBADF) || ws.ExitStatus() != 127 {
		t.Errorf("executed %v, status %v; want EBADF and 127", err, ws)
	}
	for _, bad := range []Spec{
		{Argv: []string{"x"}, Moves: make([]Move, maxMoves+1)},
		{Argv: []string{"x"}, Moves: []Move{{1, 1}}, Prog: 20},     // the program's descriptor not moved
		{Argv: []string{"x\x00y"}, Moves: []Move{{1, 1}}, Prog: 1}, // a NUL
		{Argv: []string{"x"}, Env: []string{"A=\x00"}, Moves: []Move{{1, 1}}, Prog: 1},
	} {
		if c, err := Spawn(bad); err == nil {
			unix.Kill(c.Pid, unix.SIGKILL)
			unix.Wait4(c.Pid, nil, 0, nil)
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestSpawnDropsEarlySignals: signals that reach the child before it
// unblocks them (sent to contain's process group before the child had a
// group of its own: a terminal's ^C, ^Z) are dropped, not taken with the
// default action: the program runs, neither ended nor stopped.
func TestSpawnDropsEarlySignals(t *testing.T) {
	needSpawn(t)
	spawnDelay = 300 * time.Millisecond
	defer func() { spawnDelay = 0 }()
	f, err := os.Open("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Spawn(Spec{Argv: []string{"sleep", "30"}, Moves: []Move{{int(f.Fd()), 20}}, Prog: 20, Setsid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Kill(c.Pid, unix.SIGKILL)
		unix.Wait4(c.Pid, nil, 0, nil)
	}()
	time.Sleep(100 * time.Millisecond) // in its pause, every signal blocked
	for _, s := range []syscall.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGTSTP, unix.SIGHUP} {
		if err := unix.Kill(c.Pid, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Executed(); err != nil {
		t.Fatal(err)
	}
	// Until it runs sleep, then a moment for a signal to act.
	var stat string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid))
		if stat = string(b); strings.Contains(stat, "(sleep)") {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid))
	stat = string(b)
	if f := strings.Fields(stat); len(f) < 3 || f[1] != "(sleep)" || f[2] != "S" {
		t.Errorf("the child is %q, want sleep, sleeping", stat)
	}
	var ws unix.WaitStatus
	if pid, _ := unix.Wait4(c.Pid, &ws, unix.WNOHANG|unix.WUNTRACED, nil); pid != 0 {
		t.Errorf("the child ended or stopped: %v", ws)
	}
}

// TestSpawnCommand: what contain run starts COMMAND with: by its path,
// the caller waiting for the exec (Vfork: Executed has its answer at
// once), in a cgroup (as root, where cgroup v2 is mounted), with
// Pdeathsig (the child ends when the thread that spawned it does), and an
// exec that fails reported with its errno.
func TestSpawnCommand(t *testing.T) {
	needSpawn(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec := Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", "cat /proc/self/cgroup; echo $$"}, Env: []string{"A=b"},
		Moves: []Move{{int(w.Fd()), 1}}, Vfork: true}
	var dir string
	if os.Geteuid() == 0 {
		for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			var st unix.Statfs_t
			if unix.Statfs(mnt, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
				dir = fmt.Sprintf("%s/contain-spawn-test-%d", mnt, os.Getpid())
				break
			}
		}
	}
	if dir != "" {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(dir)
		fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		spec.UseCgroupFD, spec.CgroupFD = true, fd
	}
	c, err := Spawn(spec)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c.a.tid != 0 {
		t.Errorf("Spawn (Vfork) returned before the child executed")
	}
	if err := c.Executed(); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	var ws unix.WaitStatus
	unix.Wait4(c.Pid, &ws, 0, nil)
	if !ws.Exited() || ws.ExitStatus() != 0 || !strings.Contains(string(out), strconv.Itoa(c.Pid)) {
		t.Fatalf("status %v, output %q", ws, out)
	}
	if dir != "" && !strings.Contains(string(out), "/contain-spawn-test-") {
		t.Errorf("not in the cgroup %s: %q", dir, out)
	}

	// An exec that fails, the caller waiting for it.
	c, err = Spawn(Spec{Path: "/nonexistent", Argv: []string{"x"}, Vfork: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Executed(); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("executed: %v, want ENOENT", err)
	}
	unix.Wait4(c.Pid, &ws, 0, nil)
	if ws.ExitStatus() != 127 {
		t.Errorf("status %v, want 127", ws)
	}

	// Pdeathsig: spawned from a thread that then ends (not the main
	// thread, which Go never ends: a goroutine that finds itself there
	// lets another try).
	pids := make(chan int)
	var spawnEnding func()
	spawnEnding = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if unix.Gettid() == os.Getpid() {
			runtime.UnlockOSThread()
			go spawnEnding()
			return
		}
		c, err := Spawn(Spec{Path: "/bin/sleep", Argv: []string{"sleep", "30"}, Pdeathsig: unix.SIGKILL, Vfork: true})
		if err != nil {
			t.Error(err)
			pids <- 0
			return
		}
		pids <- c.Pid
	}
	go spawnEnding()
	pid := <-pids
	if pid == 0 {
		return
	}
	done := make(chan unix.WaitStatus)
	go func() {
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		done <- ws
	}()
	select {
	case ws := <-done:
		if !ws.Signaled() || ws.Signal() != unix.SIGKILL {
			t.Errorf("the child ended with %v, want SIGKILL", ws)
		}
	case <-time.After(10 * time.Second):
		unix.Kill(pid, unix.SIGKILL)
		<-done
		t.Errorf("the child outlived the thread that spawned it by 10s: no Pdeathsig")
	}
}

// TestSpawnForegroundCtrlC: a ^C typed once the child's group has the
// terminal's foreground (after TIOCSPGRP, before it executes) reaches the
// child, which ends of it: only the signals that came before it had a
// group of its own are dropped. The child runs in a helper process that
// leads a session on a pseudo-terminal of its own.
func TestSpawnForegroundCtrlC(t *testing.T) {
	needSpawn(t)
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer unix.Close(master)
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "CONTAIN_SPAWN_FOREGROUND_HELPER=1")
	cmd.Stdin = pts
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the child is in its pause, after TIOCSPGRP
	if _, err := unix.Write(master, []byte{3}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the helper: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "child: signal 2") {
		t.Errorf("the ^C did not end the child:\n%s", out.String())
	}
}

// TestMain runs TestSpawnForegroundCtrlC's helper process when asked to.
func TestMain(m *testing.M) {
	if os.Getenv("CONTAIN_SPAWN_FOREGROUND_HELPER") != "" {
		foregroundHelper()
		return
	}
	os.Exit(m.Run())
}

// foregroundHelper is TestSpawnForegroundCtrlC's helper process: it
// spawns sleep in the terminal's foreground, pausing after TIOCSPGRP, and
// says how it ended.
func foregroundHelper() {
	spawnDelayForeground = 800 * time.Millisecond
	c, err := Spawn(Spec{Path: "/bin/sleep", Argv: []string{"sleep", "5"}, Moves: []Move{{0, 0}, {1, 1}, {2, 2}},
		Foreground: true, Ctty: 0, Vfork: true})
	if err != nil {
		fmt.Println("spawn:", err)
		os.Exit(1)
	}
	c.Executed()
	var ws unix.WaitStatus
	unix.Wait4(c.Pid, &ws, 0, nil)
	switch {
	case ws.Signaled():
		fmt.Printf("child: signal %d\n", ws.Signal())
	default:
		fmt.Printf("child: exit %d\n", ws.ExitStatus())
	}
}
