package reap

import (
	"os"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc"
)

// sleeper runs long, for the tests that reap it.
var sleeper = []string{"ping", "-n", "60", "127.0.0.1"}

// stopped: whether a process is suspended is not asked of Windows here.
// TestLookupOriginator: a running process exists with its creation time;
// a PID no process has does not exist.
func TestLookupOriginator(t *testing.T) {
	o, err := proc.LookupOriginator(0, os.Getpid())
	if err != nil || !o.Exists || o.Zombie || o.Start == 0 {
		t.Fatalf("LookupOriginator(self) = %+v, %v", o, err)
	}
	if started := proc.FiletimeToTime(o.Start); time.Since(started) > time.Hour || time.Since(started) < 0 {
		t.Fatalf("this process started at %v", started)
	}
	if o, err := proc.LookupOriginator(0, 2147483644); err != nil || o.Exists {
		t.Fatalf("LookupOriginator(2147483644) = %+v, %v", o, err)
	}
}
