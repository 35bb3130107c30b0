//go:build !linux

package shim

import (
	"fmt"
	"os"

	"github.com/contain-cli/contain/internal/entry"
)

// Arg is argv[1] of the shim, which only Linux has: it needs a subreaper
// (PR_SET_CHILD_SUBREAPER), and neither macOS nor Windows has one (XNU
// re-parents every orphan to launchd; a job object holds a Windows
// session whatever its parentage).
const Arg = "__shim"

// Main: there is no shim on this OS.
func Main([]string) int {
	fmt.Fprintln(os.Stderr, "contain: the shim needs a subreaper, which only Linux has")
	return entry.Refused
}
