package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// TestStartHook: cmd /c runs the hook's command line as written, with its
// environment; Kill ends it and what it started (its job).
func TestStartHook(t *testing.T) {
	// (Not t.TempDir: Wine 8 lacks what os.RemoveAll needs.)
	dir, err := os.MkdirTemp("", "hook")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	env := Env(os.Environ(), 42, "T:9", 7)
	h, err := Start(fmt.Sprintf(`echo %%CONTAIN_COMMAND_PID%% %%CONTAIN_SESSION%% %%CONTAIN_PID%% "a  b"> "%s" & exit 3`, out), env)
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
	h, err = Start("start /b \"\" "+sleeper+" & "+sleeper, append(env, "CONTAIN_HOOK_HELPER=sleep"))
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

// TestHelperProcess is this test binary run as a sleeper by the hooks of
// TestStartHook.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("CONTAIN_HOOK_HELPER") == "sleep" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// TestHookEnvReplaces: an inherited variable of the hook's is replaced,
// whatever the case of its name.
func TestHookEnvReplaces(t *testing.T) {
	env := Env([]string{"Contain_Command_Pid=1", "X=y"}, 5, "A:1", 6)
	got := strings.Join(env, " ")
	if want := "X=y CONTAIN_COMMAND_PID=5 CONTAIN_SESSION=A:1 CONTAIN_PID=" + strconv.Itoa(6); got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
