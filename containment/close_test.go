//go:build linux || windows

package containment_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/contain-cli/contain/containment"
)

// TestCloseWhileStarting: Close while other goroutines start commands:
// every command that Start started is ended by Close (none starts after
// the holder has closed the session and survives: on Windows one did,
// started after Close had overtaken its Start, until startHeld looked at
// closed again under the start lock), and every Start after Close says
// ErrClosed. Over many rounds: the start and the close race.
func TestCloseWhileStarting(t *testing.T) {
	for round := range closeRaceRounds {
		g, err := containment.NewGroup(containment.Options{Originator: "RACETEST", Grace: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(longCommand(t)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var cmds []*exec.Cmd
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c := longCommand(t)
					err := g.Start(c)
					switch {
					case errors.Is(err, containment.ErrClosed):
						return // refused: Close has run
					case err != nil:
						t.Errorf("round %d: Start: %v", round, err)
						return
					}
					mu.Lock()
					cmds = append(cmds, c)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(round%5) * closeRaceStep)
		if _, err := g.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait() // each goroutine ends at its first refused Start
		for _, c := range cmds {
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("round %d: a command exited 0: it was not ended", round)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("round %d: command %d outlived Close", round, c.Process.Pid)
				c.Process.Kill()
			}
		}
	}
}
