package hook

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// hookLog collects what Run says.
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
			o := Options{Command: "x y", Grace: c.grace, Tag: "T:9", Log: l.log}
			f := &fakeHook{end: make(chan string, 1)}
			started := 0
			start := func(command string, env []string) (Process, error) {
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
			Run(o, []string{"PATH=p", "contain_pid=old"}, 42, 7, start)
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
			if c.ends == 0 && (took < c.grace || took > c.grace+killWait) {
				t.Errorf("Run took %v with a grace period of %v", took, c.grace)
			}
			if c.ends > 0 && took > c.grace {
				t.Errorf("Run took %v for a hook that ended after %v", took, c.ends)
			}
		})
	}
	want := []string{"PATH=p", "contain_pid=old", "CONTAIN_COMMAND_PID=42", "CONTAIN_SESSION=T:9", "CONTAIN_PID=7"}
	if runtime.GOOS == "windows" {
		// Windows' names know no case: contain_pid is CONTAIN_PID.
		want = slices.Delete(want, 1, 2)
	}
	if strings.Join(gotEnv, " ") != strings.Join(want, " ") {
		t.Errorf("the hook's environment: %q, want %q", gotEnv, want)
	}
}
