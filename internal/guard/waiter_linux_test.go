package guard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/builtin"
	"github.com/contain-cli/contain/internal/signals"
)

// TestCodedWaiter: the built-in waiter runs as contain-guard, from a
// memfd, ignoring the signals the guard ignores, and takes far more
// orders than a pipe holds without reading them (a pipe nobody reads
// would block contain at 64 KiB). It is killed, never let to execute
// this test binary as the guard.
func TestCodedWaiter(t *testing.T) {
	if !builtin.Available() {
		t.Skipf("no built-in waiter for %s: the guard waits in /bin/sh", runtime.GOARCH)
	}
	if b, err := os.ReadFile("/proc/sys/vm/memfd_noexec"); err == nil && strings.TrimSpace(string(b)) == "2" {
		t.Skip("vm.memfd_noexec is 2: the kernel executes no memfd, and the guard waits in /bin/sh")
	}
	g, err := startCoded()
	if err != nil {
		t.Fatalf("the built-in waiter: %v", err)
	}
	defer g.Stop()
	if g.ready != nil || g.hold == nil {
		t.Fatalf("the built-in waiter needs no word, and holds a pipe: %+v", g)
	}
	line := fmt.Sprintf("member %d %d\n", 123456, 987654321)
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 4<<20/len(line) && err == nil; i++ {
			_, err = g.w.WriteString(line)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("4 MiB of orders blocked contain")
	}
	var comm []byte
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		comm, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", g.pid))
		if string(comm) == "contain-guard\n" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if string(comm) != "contain-guard\n" {
		t.Fatalf("the waiter's name is %q", comm)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", g.pid)); !strings.HasPrefix(exe, "/memfd:contain-guard") {
		t.Errorf("the waiter runs %q, not its memfd", exe)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.pid))
	if err != nil {
		t.Fatal(err)
	}
	var ign uint64
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:\t"); ok {
			ign, _ = strconv.ParseUint(v, 16, 64)
		}
	}
	for _, s := range signals.Fatal() {
		if n := s.(syscall.Signal); ign&(1<<(n-1)) == 0 {
			t.Errorf("the waiter does not ignore %v", s)
		}
	}
	// Its fds: the pipe (3), the orders (4), contain's binary (5); not
	// its own image (6).
	if _, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/6", g.pid)); err == nil {
		t.Errorf("the waiter keeps its own image open as fd 6")
	}
	syscall.Kill(g.pid, syscall.SIGTERM)
	time.Sleep(20 * time.Millisecond)
	if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", g.pid)); !bytes.Contains(st, []byte(") S ")) {
		t.Errorf("SIGTERM ended the waiter, or it does not sleep: %s", st)
	}
}

// needSpawnedWaiter skips a test where the waiter cannot be spawned.
func needSpawnedWaiter(t *testing.T) {
	t.Helper()
	if !builtin.Available() {
		t.Skipf("no built-in waiter for %s", runtime.GOARCH)
	}
	if p, err := prepareSpawned(); err != nil {
		t.Skipf("no spawned waiter here: %v", err)
	} else {
		p.drop(nil)
	}
}

// startElsewhere starts a guard with start on another goroutine, as
// contain run does (the guard is no child of the caller's thread).
func startElsewhere(t *testing.T, start func() (*Guard, error)) *Guard {
	t.Helper()
	var g *Guard
	done := make(chan error)
	go func() {
		var err error
		g, err = start()
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSpawnedWaiter: the waiter that Prepare readies and another thread
// starts waits as the built-in waiter does once Ready returns, with
// nothing failed.
func TestSpawnedWaiter(t *testing.T) {
	needSpawnedWaiter(t)
	g := startElsewhere(t, Prepare())
	defer g.Stop()
	if g.starting == nil {
		t.Fatalf("Prepare did not ready the spawned waiter: %+v", g)
	}
	if failed, err := g.Ready(); failed != nil || err != nil {
		t.Fatalf("Ready: %v, %v", failed, err)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", g.pid)); !strings.HasPrefix(exe, "/memfd:contain-guard") {
		t.Errorf("the waiter runs %q, not its memfd", exe)
	}
	if sid, _ := unix.Getsid(g.pid); sid != g.pid {
		t.Errorf("the waiter's session is %d, want its own", sid)
	}
}

// TestSpawnedWaiterFallsBack: a spawned waiter that the kernel will not
// execute is replaced by Ready, the orders written so far handed to the
// one that replaces it, and the first reaped.
func TestSpawnedWaiterFallsBack(t *testing.T) {
	needSpawnedWaiter(t)
	spawnFault = true
	defer func() { spawnFault = false }()
	g := startElsewhere(t, Start)
	defer g.Stop()
	first := g.pid
	orders := "session TEST:1 1s false 15 false\nmember 123 456\n"
	if _, err := g.w.WriteString(orders); err != nil {
		t.Fatal(err)
	}
	failed, err := g.Ready()
	if !errors.Is(failed, syscall.EACCES) || err != nil {
		t.Fatalf("Ready: %v, %v; want EACCES, and a guard started otherwise", failed, err)
	}
	if g.pid == first || g.pid == 0 || g.starting != nil {
		t.Fatalf("not replaced: %+v", g)
	}
	if _, err := syscall.Wait4(first, nil, syscall.WNOHANG, nil); err != syscall.ECHILD {
		t.Errorf("the waiter that failed is not reaped: %v", err)
	}
	if g.hold != nil { // the built-in waiter again (through Go's ForkExec): its orders are a memfd
		got, _ := io.ReadAll(io.NewSectionReader(g.w, 0, 1<<20))
		if string(got) != orders {
			t.Errorf("the new guard's orders: %q, want %q", got, orders)
		}
	}
	if err := syscall.Kill(g.pid, 0); err != nil {
		t.Errorf("the new guard: %v", err)
	}
}
