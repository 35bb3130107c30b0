//go:build darwin

package tests

// End-to-end tests of contain run on macOS. Nothing on the development
// machine runs a darwin binary: these run on the macOS runners of
// .github/workflows/ci.yml (go test ./...), the first place where contain
// run meets a real macOS kernel.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/report"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "contain-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "contain")
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building contain:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// setsid(1) is not on macOS; perl is.
const setsid = `perl -MPOSIX -e 'POSIX::setsid() or die; exec @ARGV or die' `

// darwinTree starts escapees of every kind and writes their PIDs into D.
const darwinTree = `
sleep 300 & echo $! > $D/background
` + setsid + `sh -c 'echo $$ > '$D'/setsid; exec sleep 300' &
sh -c 'sleep 300 & echo $! > '$D'/doublefork' &
` + setsid + `env -i /bin/sh -c 'sleep 300 & echo $! > '$D'/cleared; sleep 0.5' &
sh -c 'trap "" TERM; echo $$ > '$D'/ignoresterm; exec sleep 300' &
for f in background setsid doublefork cleared ignoresterm; do
	while [ ! -s $D/$f ]; do sleep 0.01; done
done
sleep 0.5 # scans see every escapee while COMMAND is their ancestor
`

var darwinKinds = []string{"background", "setsid", "doublefork", "cleared", "ignoresterm"}

// alive: kill(pid, 0) finds it and ps does not show it as a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

func readPIDs(t *testing.T, dir string, kinds []string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, k := range kinds {
		b, err := os.ReadFile(filepath.Join(dir, k))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("%s: no PID recorded (%v)", k, err)
		}
		pids[k] = pid
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	return pids
}

func TestDarwinRunLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "-v", "-g", "0.5", "--", "sh", "-c", "D="+dir+"\n"+darwinTree)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("contain run: %v\n%s", err, stderr.String())
	}
	for kind, pid := range readPIDs(t, dir, darwinKinds) {
		if alive(pid) {
			t.Errorf("%s %d survived contain run", kind, pid)
		}
	}
	if !strings.Contains(stderr.String(), "containment: process group, tracking") {
		t.Errorf("verbose output does not name the tracking:\n%s", stderr.String())
	}
}

func TestDarwinCrash(t *testing.T) {
	dir := t.TempDir()
	script := "D=" + dir + "\n" + darwinTree + "echo $$ > $D/ready\nwait\n"
	cmd := exec.Command(bin, "run", "-v", "--", "sh", "-c", script)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "ready")); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not get ready:\n%s", stderr.String())
		}
	}
	pids := readPIDs(t, dir, append(darwinKinds, "ready"))
	m := regexp.MustCompile(`crash guard: PID (\d+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no crash guard:\n%s", stderr.String())
	}
	guard, _ := strconv.Atoi(m[1])
	time.Sleep(700 * time.Millisecond) // the cleared escapee's parent has exited, a scan has seen it
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	for {
		var left []string
		for kind, pid := range pids {
			if alive(pid) {
				left = append(left, fmt.Sprintf("%s %d", kind, pid))
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Since(killed) > time.Second {
			t.Fatalf("alive a second after contain was killed: %v\n%s", left, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("all gone %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
	for deadline := time.Now().Add(2 * time.Second); alive(guard); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the guard %d is still there", guard)
		}
	}
}

func TestDarwinTimeout(t *testing.T) {
	cmd := exec.Command(bin, "run", "-t", "0.2", "--", "sleep", "10")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 124 {
		t.Fatalf("contain run -t 0.2 -- sleep 10: %v, want exit status 124", err)
	}
}

// COMMAND killed by SIGTERM: contain dies of SIGTERM too.
func TestDarwinDiesOfCommandsSignal(t *testing.T) {
	err := exec.Command(bin, "run", "--", "sh", "-c", "kill -TERM $$").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%v", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("contain ended with %v, want killed by SIGTERM", ws)
	}
}

// TestDarwinReport: --report on macOS: COMMAND's end, the tracking as the
// containment, and the leftovers with how they were found and ended.
func TestDarwinReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, "run", "-g", "0.5", "--report", path, "--", "sh", "-c", "D="+dir+"\n"+darwinTree+"exit 3\n")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("contain run: %v, want exit status 3", err)
	}
	pids := readPIDs(t, dir, darwinKinds)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if r.Version != 1 || r.Ending.ExitCode == nil || *r.Ending.ExitCode != 3 || !strings.Contains(strings.Join(r.Containment, ","), "tracking") {
		t.Errorf("report:\n%s", b)
	}
	found := map[int]report.Leftover{}
	for _, l := range r.Leftovers {
		found[l.PID] = l
	}
	for kind, pid := range pids {
		l, ok := found[pid]
		if !ok || l.EndedBy == "" || l.EndedBy == "still running" || l.FoundBy == "" {
			t.Errorf("%s %d: %+v (found %v)", kind, pid, l, ok)
		}
	}
	if r.Resources.CPUUserSeconds == nil {
		t.Errorf("no CPU figure:\n%s", b)
	}
	t.Logf("report:\n%s", b)
}
