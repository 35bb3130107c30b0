package containment_test

import (
	"os"
	"testing"

	"github.com/contain-cli/contain/containment"
)

// TestMain: this test binary is a host too; its copies run here.
func TestMain(m *testing.M) {
	containment.Main()
	os.Exit(m.Run())
}
