package guard

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/signals"
)

// TestClonedWaiter: the crash guard's clone of contain is named
// contain-guard, leads a session of its own, holds exactly descriptors 0
// to 5 (not the copy it got of a pipe contain opened before, which could
// be one whose hang-up means contain died), has no handler of the Go
// runtime's left, blocks every signal in signals.Fatal and no other
// (SIGTERM does not end it), and 4 MiB of orders are written without a
// reader.
func TestClonedWaiter(t *testing.T) {
	if !closeRangeWorks() {
		t.Skip("no close_range (Linux before 5.9): the guard waits in the built-in waiter")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	g, err := startCloned()
	if err != nil {
		t.Fatalf("the cloned waiter: %v", err)
	}
	defer g.Stop()
	if g.ready != nil || g.hold == nil || g.waiter != "a clone of contain" {
		t.Fatalf("the cloned waiter needs no word, and holds a pipe: %+v", g)
	}
	fillOrders(t, g)
	var comm []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if comm, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", g.pid)); string(comm) == "contain-guard\n" {
			break
		}
	}
	if string(comm) != "contain-guard\n" {
		t.Fatalf("the waiter's name is %q", comm)
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", g.pid))
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		fds = append(fds, n)
	}
	slices.Sort(fds)
	if !slices.Equal(fds, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("the waiter holds descriptors %v, want 0 to 5", fds)
	}
	for fd, want := range map[int]string{0: "/dev/null", 4: "/memfd:contain-guard-orders", 5: mustExe(t)} {
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", g.pid, fd)); !strings.HasPrefix(got, want) {
			t.Errorf("the waiter's fd %d is %q, want %q", fd, got, want)
		}
	}
	if sid, err := syscall.Getpgid(g.pid); err != nil || sid != g.pid {
		t.Errorf("the waiter's process group is %d (%v), want its own", sid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.pid))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) uint64 {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, name+":\t"); ok {
				n, _ := strconv.ParseUint(v, 16, 64)
				return n
			}
		}
		t.Fatalf("no %s in /proc/PID/status", name)
		return 0
	}
	var fatal uint64
	for _, s := range signals.Fatal() {
		fatal |= 1 << (s.(syscall.Signal) - 1)
	}
	if blk, cgt := field("SigBlk"), field("SigCgt"); blk != fatal || cgt != 0 {
		t.Errorf("the waiter blocks %#x and catches %#x, want %#x (signals.Fatal) and nothing", blk, cgt, fatal)
	}
	syscall.Kill(g.pid, syscall.SIGTERM)
	time.Sleep(20 * time.Millisecond)
	if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", g.pid)); !bytes.Contains(st, []byte(") S ")) {
		t.Errorf("SIGTERM ended the waiter, or it does not sleep: %s", st)
	}
}

func mustExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestClonedWaiterFails: a child that cannot put its descriptors in place
// says so and exits, and Failed reports it (contain then starts another
// waiter before COMMAND) rather than hand contain a guard that is not
// there.
func TestClonedWaiterFails(t *testing.T) {
	if !closeRangeWorks() {
		t.Skip("no close_range (Linux before 5.9): the guard waits in the built-in waiter")
	}
	cloneFault = true
	defer func() { cloneFault = false }()
	g, err := startCloned()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	for deadline := time.Now().Add(10 * time.Second); !g.Failed(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a cloned waiter without its descriptors is not reported as failed")
		}
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(g.pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 127 {
		t.Errorf("the failed waiter ended with %v (%v), want exit 127", ws, err)
	}
	cloneFault = false
	g2, err := startCloned()
	if err == nil {
		defer g2.Stop()
		time.Sleep(50 * time.Millisecond)
		if g2.Failed() {
			t.Error("cloneFault leaked into the next start")
		}
	}
}
