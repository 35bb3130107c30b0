//go:build !linux

package run

import (
	"fmt"
	"os"
)

// ShimCommand is argv[1] of the shim, which only Linux has: it needs a
// subreaper (PR_SET_CHILD_SUBREAPER), and neither macOS nor Windows has
// one (XNU re-parents every orphan to launchd; a job object holds a
// Windows session whatever its parentage).
const ShimCommand = "__shim"

// ShimMain: there is no shim on this OS.
func ShimMain([]string) int {
	fmt.Fprintln(os.Stderr, "contain: the shim needs a subreaper, which only Linux has")
	return 125
}
