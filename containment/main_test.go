package containment_test

import (
	"os"
	"testing"
)

// TestMain: this test binary is a host too, without containment.Main:
// the package's init function runs its copies, guards and shims, as in
// any test binary that links it (and the tests that kill a copy prove
// that its guard did not run these tests again). It plays the helper
// that CONTAINMENT_TEST_HELPER names, too.
func TestMain(m *testing.M) {
	if h := helpers[os.Getenv("CONTAINMENT_TEST_HELPER")]; h != nil {
		h()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helpers are the programs this test binary plays (group_linux_test.go).
var helpers = map[string]func(){}
