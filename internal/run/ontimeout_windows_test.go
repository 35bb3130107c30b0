package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// fakeHook is a hook that ends when told to, or when killed.
type fakeHook struct {
	end    chan string
	mu     sync.Mutex
	kills  int
	killed time.Time
}

func (f *fakeHook) Wait() string { return <-f.end }

func (f *fakeHook) Kill() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills++
	f.killed = time.Now()
	select {
	case f.end <- "terminated":
	default:
	}
	return nil
}

// hookLog collects what runHook says.
type hookLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *hookLog) log(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *hookLog) has(t *testing.T, prefix string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.HasPrefix(line, prefix) {
			return
		}
	}
	t.Errorf("-v does not say %q: %q", prefix, l.lines)
}

// TestRunHook: the hook gets the three variables, is waited for at most
// the grace period, then killed (once, whether it ended or not: what it
// started goes with it); a grace period of 0 runs no hook.
func TestRunHook(t *testing.T) {
	var gotEnv []string
	for _, c := range []struct {
		name  string
		grace time.Duration
		ends  time.Duration // when the hook ends by itself; 0: never
		want  string
	}{
		{"ends", time.Second, 50 * time.Millisecond, "on-timeout: exited 3 after "},
		{"hangs", 200 * time.Millisecond, 0, "on-timeout: still running after the grace period of 200ms: ending it and what it started"},
		{"no grace", 0, 0, "on-timeout: not running "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l hookLog
			o := &Options{OnTimeout: "x y", Grace: c.grace, Tag: "T:9", Log: l.log}
			f := &fakeHook{end: make(chan string, 1)}
			started := 0
			start := func(command string, env []string) (hookProcess, error) {
				started++
				gotEnv = env
				if command != "x y" {
					t.Errorf("started %q", command)
				}
				if c.ends > 0 {
					time.AfterFunc(c.ends, func() { f.end <- "exited 3" })
				}
				return f, nil
			}
			began := time.Now()
			runHook(o, []string{"PATH=p", "contain_pid=old"}, 42, 7, start)
			took := time.Since(began)
			l.has(t, c.want)
			if c.grace == 0 {
				if started != 0 {
					t.Error("a hook was run with a grace period of 0")
				}
				return
			}
			if f.kills != 1 {
				t.Errorf("Kill called %d times", f.kills)
			}
			if c.ends == 0 && (took < c.grace || took > c.grace+hookKillWait) {
				t.Errorf("runHook took %v with a grace period of %v", took, c.grace)
			}
			if c.ends > 0 && took > c.grace {
				t.Errorf("runHook took %v for a hook that ended after %v", took, c.ends)
			}
		})
	}
	want := []string{"PATH=p", "CONTAIN_COMMAND_PID=42", "CONTAIN_SESSION=T:9", "CONTAIN_PID=7"}
	if strings.Join(gotEnv, " ") != strings.Join(want, " ") {
		t.Errorf("the hook's environment: %q, want %q", gotEnv, want)
	}
}

// TestStartHook: cmd /c runs the hook's command line as written, with its
// environment; Kill ends it and what it started (its job).
func TestStartHook(t *testing.T) {
	// (Not t.TempDir: Wine 8 lacks what os.RemoveAll needs.)
	dir, err := os.MkdirTemp("", "hook")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	env := hookEnv(os.Environ(), 42, "T:9", 7)
	h, err := startHook(fmt.Sprintf(`echo %%CONTAIN_COMMAND_PID%% %%CONTAIN_SESSION%% %%CONTAIN_PID%% "a  b"> "%s" & exit 3`, out), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Wait(); got != "exited 3" {
		t.Errorf("the hook %s, want exited 3", got)
	}
	if err := h.Kill(); err != nil {
		t.Errorf("Kill after the hook ended: %v", err)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != `42 T:9 7 "a  b"` {
		t.Errorf("the hook wrote %q", b)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sleeper := fmt.Sprintf(`"%s" -test.run=^TestHelperProcess$`, self)
	h, err = startHook("start /b \"\" "+sleeper+" & "+sleeper, append(env, "CONTAIN_RUN_HELPER=sleep"))
	if err != nil {
		t.Fatal(err)
	}
	w := h.(*winHook)
	var held []windows.Handle
	for deadline := time.Now().Add(30 * time.Second); len(held) < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, ph := range held {
			windows.CloseHandle(ph)
		}
		held = held[:0]
		for _, pid := range w.job.PIDs() {
			if ph, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid)); err == nil {
				held = append(held, ph)
			}
		}
	}
	if len(held) < 3 {
		t.Fatalf("the hook's job holds %d processes, want cmd and two sleepers", len(held))
	}
	ended := make(chan string, 1)
	go func() { ended <- h.Wait() }()
	if err := h.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case how := <-ended:
		if how != "terminated with its job" {
			t.Errorf("the killed hook %s", how)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed hook did not end")
	}
	for i, ph := range held {
		if ev, _ := windows.WaitForSingleObject(ph, 5000); ev != windows.WAIT_OBJECT_0 {
			t.Errorf("process %d of the hook's job outlived Kill", i)
		}
		windows.CloseHandle(ph)
	}
}

// TestHookEnvReplaces: an inherited variable of the hook's is replaced,
// whatever the case of its name.
func TestHookEnvReplaces(t *testing.T) {
	env := hookEnv([]string{"Contain_Command_Pid=1", "X=y"}, 5, "A:1", 6)
	got := strings.Join(env, " ")
	if want := "X=y CONTAIN_COMMAND_PID=5 CONTAIN_SESSION=A:1 CONTAIN_PID=" + strconv.Itoa(6); got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
