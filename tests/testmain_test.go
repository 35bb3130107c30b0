//go:build linux || darwin || windows

package tests

import (
	"os"
	"testing"
)

// TestMain is the test binary's one entry on every OS; runTests, one per
// OS, makes ready what that OS's tests need (main_test.go: contain, hog
// and setsid built; darwin_test.go: contain built; win_main_test.go: this
// binary may be a helper process instead) and runs them.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}
