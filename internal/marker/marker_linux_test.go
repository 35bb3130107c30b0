package marker

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/testtool"
)

// TestPlaceAndHolds: a child started after Place holds the marker at FD,
// Of reads its identity there, Pipes finds it (also at another number),
// and a process started before it does not hold it.
func TestPlaceAndHolds(t *testing.T) {
	testtool.Need(t, "bash", "bash") // dash takes no descriptor above 9
	before := exec.Command("sleep", "30")
	if err := before.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { before.Process.Kill(); before.Wait() }()
	ino, release, err := Place()
	if err != nil {
		t.Fatal(err)
	}
	// The child moves it to 7 as well, and closes FD: a holder still.
	child := exec.Command("bash", "-c", "exec 7>&205 205>&-; exec sleep 30")
	err = child.Start()
	release(false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	if _, err := os.Stat("/proc/self/fd/205"); err == nil {
		t.Errorf("released without keep, yet this process still has descriptor %d", FD)
	}
	var held, readable bool
	for range 100 { // until bash has run its redirections
		if Of(child.Process.Pid) == 0 {
			if held, readable = holds(child.Process.Pid, ino); held {
				break
			}
		}
		exec.Command("sleep", "0.02").Run()
	}
	if !held || !readable {
		t.Errorf("the child holds marker %d at descriptor 7: Holds %v, %v", ino, held, readable)
	}
	if held, readable := holds(before.Process.Pid, ino); held || !readable {
		t.Errorf("a process started before the marker: Holds %v, %v", held, readable)
	}
}

// holds reports whether pid holds marker ino, as reap reads it (Pipes).
func holds(pid int, ino uint64) (held, readable bool) {
	pipes, readable := Pipes(pid)
	return slices.Contains(pipes, ino), readable
}

func TestPipeInode(t *testing.T) {
	for link, want := range map[string]uint64{"pipe:[15747903]": 15747903, "socket:[12]": 0, "pipe:[x]": 0, "/dev/null": 0, "pipe:[12": 0} {
		if got := pipeInode(link); got != want {
			t.Errorf("pipeInode(%q) = %d, want %d", link, got, want)
		}
	}
}

// TestNoMarkerUnderALowLimit: where the limit of open files is at or
// below FD, New refuses, and nothing is placed.
func TestNoMarkerUnderALowLimit(t *testing.T) {
	if !fits(FD+16) || !fits(1024) || fits(FD+1) || fits(FD) || fits(64) {
		t.Errorf("fits: %v %v %v %v %v", fits(FD+16), fits(1024), fits(FD+1), fits(FD), fits(64))
	}
}

// TestFilesKeepInherited: Go's fork, given Files, hands COMMAND what
// contain inherited at its number (make's jobserver, a 5>log), closes the
// rest below FD, and puts w at FD; a descriptor inherited at FD itself
// stays COMMAND's, and no marker is made.
func TestFilesKeepInherited(t *testing.T) {
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const kept, own = 9, 11
	if err := unix.Dup3(int(f.Fd()), kept, 0); err != nil { // inherited: no close-on-exec
		t.Fatal(err)
	}
	defer unix.Close(kept)
	if err := unix.Dup3(int(f.Fd()), own, unix.O_CLOEXEC); err != nil { // this process's own
		t.Fatal(err)
	}
	defer unix.Close(own)
	files := Files(50)
	if len(files) != FD+1 || files[0] != 0 || files[2] != 2 || files[kept] != kept || files[own] != ^uintptr(0) || files[FD] != 50 {
		t.Errorf("Files: len %d, [0] %d, [2] %d, [%d] %d, [%d] %d, [FD] %d", len(files), files[0], files[2], kept, files[kept], own, files[own], files[FD])
	}
	if err := unix.Dup3(int(f.Fd()), FD, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(FD)
	if w, _, err := New(); err == nil {
		unix.Close(w)
		t.Errorf("New with descriptor %d inherited: no error", FD)
	}
}
