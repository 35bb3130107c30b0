package claim_test

import (
	"testing"

	"github.com/contain-cli/contain/internal/claim"
	"github.com/contain-cli/contain/internal/runcmd"
)

// TestDetachArgvKnowsRunsOptions: the claim's reading of contain run -d's
// command line knows which of contain run's options take a value.
func TestDetachArgvKnowsRunsOptions(t *testing.T) {
	for _, o := range runcmd.Options {
		for _, n := range o.Names() {
			if claim.RunBoolFlags[n] != o.Bool || claim.RunValueFlags[n] == o.Bool {
				t.Errorf("option %q: bool %t in runcmd, %t in the claim's reading (takes a value there: %t)", n, o.Bool, claim.RunBoolFlags[n], claim.RunValueFlags[n])
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
			if !claim.DetachArgv(argv) {
				t.Errorf("%q is not read as contain run -d", argv)
			}
		}
	}
}
