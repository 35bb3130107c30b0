package platform

import (
	"flag"
	"os"
	"testing"
	"time"
)

// sleeper runs long, for the tests that reap it: this test binary, asleep
// (TestDarwinSleeper). Not /bin/sleep: macOS hides the environment of
// Apple's binaries from other processes, and the tests find it by its tag.
var sleeper = []string{os.Args[0], "-test.run=^TestDarwinSleeper$", "-test.count=1", "contain-sleeper"}

// TestDarwinSleeper sleeps when run as the sleeper, and is skipped
// otherwise.
func TestDarwinSleeper(t *testing.T) {
	if flag.Arg(0) != "contain-sleeper" {
		t.Skip("only the sleeper of the reap tests")
	}
	time.Sleep(30 * time.Second)
	os.Exit(0)
}

// stopped reports whether pid shows as stopped (p_stat SSTOP).
func stopped(pid int) bool {
	p, found, err := darwin.lookup(pid)
	return err == nil && found && p.stopped()
}
