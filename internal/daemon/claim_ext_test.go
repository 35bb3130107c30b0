package daemon_test

import (
	"testing"

	"github.com/contain-cli/contain/internal/daemon"
	"github.com/contain-cli/contain/internal/runcmd"
)

// TestDetachArgvKnowsRunsOptions: the claim's reading of contain run -d's
// command line knows which of contain run's options take a value.
func TestDetachArgvKnowsRunsOptions(t *testing.T) {
	for _, o := range runcmd.Options {
		for _, n := range o.Names() {
			if daemon.RunBoolFlags[n] != o.Bool || daemon.RunValueFlags[n] == o.Bool {
				t.Errorf("option %q: bool %t in runcmd, %t in the claim's reading (takes a value there: %t)", n, o.Bool, daemon.RunBoolFlags[n], daemon.RunValueFlags[n])
			}
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			argv := []string{"contain", "run", dash + n}
			if !o.Bool {
				argv = append(argv, "VALUE")
			}
			argv = append(argv, "-d", "--", "x")
			if !daemon.DetachArgv(argv) {
				t.Errorf("%q is not read as contain run -d", argv)
			}
		}
	}
}
