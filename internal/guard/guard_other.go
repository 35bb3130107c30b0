//go:build !linux && !darwin

package guard

import (
	"os"
	"runtime"

	"github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/text"
)

// Arg is argv[1] of the crash guard, which only Linux and macOS have: on
// Windows the job object ends the group when contain ends, however it
// ends.
const Arg = "__guard"

// Main: there is no crash guard on this OS.
func Main([]string) int {
	text.Fprintf(os.Stderr, "contain: there is no crash guard on %s\n", runtime.GOOS)
	return entry.Refused
}
