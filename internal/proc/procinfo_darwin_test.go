package proc

// These tests run only on macOS (the CI workflow's runners): each checks
// what procinfo_darwin.go reads from a real kernel, which could not be
// run where it was written.

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestDarwinUniqueIDs: a child's parent at fork is this process, its
// unique ID comes later, its original parent's pidversion is this
// process's (0 before macOS 15.4), and a zombie still answers.
func TestDarwinUniqueIDs(t *testing.T) {
	self, err := UniqueIDs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.UniqueID == 0 || self.IDVersion == 0 {
		t.Fatalf("UniqueIDs(self) = %+v", self)
	}
	launchd, err := UniqueIDs(1)
	if err != nil || launchd.UniqueID != 1 {
		t.Errorf("UniqueIDs(launchd) = %+v, %v; want unique ID 1 (any user may read it)", launchd, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	child, err := UniqueIDs(pid)
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentUniqueID != self.UniqueID || child.UniqueID <= self.UniqueID {
		t.Errorf("child %+v of %+v: want its parent's unique ID, and a larger one of its own", child, self)
	}
	if v := child.OrigParentIDVersion; v != 0 && v != self.IDVersion {
		t.Errorf("child's original parent's pidversion %d, want 0 (before 15.4) or this process's %d", v, self.IDVersion)
	}
	t.Logf("self %+v, child %+v", self, child)
	for i := 0; ; i++ { // until it is a zombie
		p, found, err := Darwin.Lookup(pid)
		if err == nil && found && p.Zombie() {
			break
		}
		if i == 500 {
			t.Fatal("the child never showed as a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if z, err := UniqueIDs(pid); err != nil || z.UniqueID != child.UniqueID {
		t.Errorf("UniqueIDs(zombie) = %+v, %v; want unique ID %d", z, err, child.UniqueID)
	}
	cmd.Wait()
	if _, err := UniqueIDs(pid); !errors.Is(err, unix.ESRCH) {
		t.Errorf("UniqueIDs after wait: %v, want ESRCH", err)
	}
}

// TestDarwinPipes: a child given one end of a pipe shows it with the same
// handles as this process does, and the other end's as its peer.
func TestDarwinPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	held, kept, err := PipeHandles(os.Getpid(), int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if h, p, err := PipeHandles(os.Getpid(), int(r.Fd())); err != nil || h != kept || p != held {
		t.Errorf("the read end: %#x, %#x, %v; want %#x, %#x", h, p, err, kept, held)
	}
	argv := testtool.Sleeper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{w} // descriptor 3
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	w.Close()
	var pipes []MacPipe
	for i := 0; i < 200; i++ { // until it has exec'd
		if pipes, err = Pipes(cmd.Process.Pid); err == nil && len(pipes) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pipes {
		found = found || p == MacPipe{FD: 3, Handle: held, Peer: kept}
	}
	if !found {
		t.Errorf("the child's pipes %+v, want fd 3 with handle %#x and peer %#x", pipes, held, kept)
	}
	fds, err := FDs(cmd.Process.Pid)
	if err != nil || len(fds) < 4 {
		t.Errorf("FDs(child) = %v, %v", fds, err)
	}
	if _, _, err := PipeHandles(cmd.Process.Pid, 0); err == nil {
		t.Error("PipeHandles of the child's standard input, not a pipe, did not fail")
	}
}
