package guard

// Runs only on macOS (the CI workflow's runners): what the guard holds
// of the session's marker, read from a real kernel.

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
)

// TestDarwinGuardHoldsKeptEnd: the guard holds the marker's kept end at
// keptFD, through the waiter shell's exec, so that the pair contain hands
// COMMAND still names the marker after contain died; this process,
// which holds its kept end elsewhere, gets no marker test from the pair.
func TestDarwinGuardHoldsKeptEnd(t *testing.T) {
	g, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	if _, err := g.Ready(); err != nil {
		t.Fatal(err)
	}
	w := g.MarkerEnd()
	if w < 0 {
		t.Fatal("the guard made no marker")
	}
	defer unix.Close(w)
	if again := g.MarkerEnd(); again != -1 {
		t.Fatalf("MarkerEnd handed its end out twice (%d)", again)
	}
	held, kept, err := proc.PipeHandles(os.Getpid(), w)
	if err != nil {
		t.Fatal(err)
	}
	// The shell executes contain __guard later: the end is held in both.
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, peer, err := proc.PipeHandles(g.PID(), keptFD)
		if err == nil && h == kept && peer == held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("guard %d's fd %d: handles %#x/%#x, %v; want %#x/%#x", g.PID(), keptFD, h, peer, err, kept, held)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if holds := markerHolds(Orders{Pair: track.Marker{Held: held, Kept: kept}}); holds != nil && mark.r != keptFD {
		t.Error("a process that holds no kept end at keptFD trusts the pair")
	}
	pipes, err := proc.Pipes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !(track.Marker{Held: held, Kept: kept}).HeldIn(pipes) {
		t.Errorf("this process holds the marker's end at %d, and HeldIn does not see it in %+v", w, pipes)
	}
}
