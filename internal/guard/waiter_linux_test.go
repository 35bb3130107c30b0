package guard

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/internal/testtool"
)

// TestWaiterELF: the built-in waiter is a static executable for this
// machine with its entry at the code, and the code is what
// testdata/waiter_amd64.S assembles to (binutils' as and objcopy).
func TestWaiterELF(t *testing.T) {
	if waiterCode == nil {
		t.Skipf("no built-in waiter for %s: the guard waits in /bin/sh", runtime.GOARCH)
	}
	img := waiterELF([]byte{15, 2})
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || f.Class != elf.ELFCLASS64 {
		t.Errorf("machine %v, type %v, class %v", f.Machine, f.Type, f.Class)
	}
	var load *elf.Prog
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			load = p
		case elf.PT_GNU_STACK:
			if p.Flags&elf.PF_X != 0 {
				t.Errorf("an executable stack: %v", p.Flags)
			}
		}
	}
	if load == nil || load.Flags != elf.PF_R|elf.PF_X || load.Filesz != uint64(len(img)) {
		t.Fatalf("the segment: %+v", load)
	}
	at := f.Entry - load.Vaddr
	if !bytes.Equal(img[at:at+uint64(len(waiterCode))], waiterCode) || !bytes.Equal(img[len(img)-3:], []byte{15, 2, 0}) {
		t.Errorf("the entry does not lead to the code and the signals after it")
	}

	as := testtool.Need(t, "as", "binutils")
	objcopy := testtool.Need(t, "objcopy", "binutils")
	dir := t.TempDir()
	for _, c := range [][]string{
		{as, "--64", "-o", filepath.Join(dir, "w.o"), "testdata/waiter_amd64.S"},
		{objcopy, "-O", "binary", "-j", ".text", filepath.Join(dir, "w.o"), filepath.Join(dir, "w.bin")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", c, err, out)
		}
	}
	want, err := os.ReadFile(filepath.Join(dir, "w.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(waiterCode, want) {
		t.Errorf("waiter_linux_amd64.go is not testdata/waiter_amd64.S: run sh testdata/mkwaiter.sh")
	}
}

// TestCodedWaiter: the built-in waiter runs as contain-guard, from a
// memfd, ignoring the signals the guard ignores, and takes far more
// orders than a pipe holds without reading them (a pipe nobody reads
// would block contain at 64 KiB). It is killed, never let to execute
// this test binary as the guard.
func TestCodedWaiter(t *testing.T) {
	if waiterCode == nil {
		t.Skipf("no built-in waiter for %s: the guard waits in /bin/sh", runtime.GOARCH)
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
