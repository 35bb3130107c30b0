//go:build linux || darwin || windows

package proc

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// hogArg makes this test binary the process that TestUsageOf reads.
const hogArg = "contain-usage-hog"

// hogMiB is how much memory the hog touches.
const hogMiB = 64

// underWine is set by usage_windows_test.go under Wine, whose wineserver
// reads another process's CPU time short of what the process reads of
// itself (120 ms against 220 ms).
var underWine bool

// hogCPU is how much CPU time the hog spends before it is read.
const hogCPU = 200 * time.Millisecond

// TestUsageHog, when run as the hog, touches hogMiB MiB, spins until it
// has used hogCPU (at most 20 s), says "ready" and sleeps; otherwise it
// does nothing (it does not skip: the Windows tests under Wine allow no
// skip).
func TestUsageHog(t *testing.T) {
	if flag.Arg(0) != hogArg {
		return
	}
	b := make([]byte, hogMiB<<20)
	for i := 0; i < len(b); i += 512 {
		b[i] = byte(i)
	}
	n := 0
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		for i := range 1 << 20 {
			n += i * i
		}
		if u, _, err := UsageOf(os.Getpid(), nil); err == nil && u.CPU >= hogCPU {
			break
		}
	}
	fmt.Println("ready", n&1)
	time.Sleep(30 * time.Second)
	runtime.KeepAlive(b)
	os.Exit(0)
}

// TestUsageOf: a child that touched 64 MiB and spun shows them in UsageOf
// (CPU time at most the time it lived on every CPU); once it ended and was
// waited for, UsageOf says so. (The hog reads its own CPU time to know
// when to stop: a UsageOf that reads too little keeps it spinning, and the
// wall-clock bound here catches one that reads too much.)
func TestUsageOf(t *testing.T) {
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUsageHog$", "-test.count=1", hogArg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- nil
			return
		}
		ready <- fmt.Errorf("the hog ended without a word: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the hog did not get ready in a minute")
	}
	lived := time.Since(start)
	u, child, err := UsageOf(cmd.Process.Pid, make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("usage %+v, children's CPU %v, after %v", u, child, lived)
	if !u.Known || u.RSS < hogMiB<<20 || u.RSS > 16<<30 {
		t.Errorf("RSS %d bytes, want at least %d MiB", u.RSS, hogMiB)
	}
	least := hogCPU
	if underWine {
		least = 10 * time.Millisecond
	}
	if u.CPU < least || u.CPU > lived*time.Duration(runtime.NumCPU())+time.Second {
		t.Errorf("CPU time %v, want %v or more, within %v on %d CPUs", u.CPU, least, lived, runtime.NumCPU())
	}
	if child != 0 {
		t.Errorf("children's CPU %v: the hog waited for no child", child)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if u, _, err := UsageOf(cmd.Process.Pid, nil); err == nil {
		t.Errorf("usage of an ended process: %+v, no error", u)
	}
}
