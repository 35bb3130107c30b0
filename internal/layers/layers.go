// Package layers reads CONTAIN_DISABLE, a comma-separated list of the
// layers contain run is to do without: how the tests, and anyone who wants
// to see what contain does without one, run the rest alone. The layers
// are cgroup, subreaper, shim, pdeathsig, systemd (Linux), waiter (the
// crash guard then waits in /bin/sh), keeper (the shim is then
// contain __shim) and spawn (COMMAND starts through Go's fork and exec);
// "macos" turns off every one macOS lacks, which leaves
// exactly what macOS has (the process group, the tracking, the crash
// guard waiting in the shell, which then sends COMMAND its -s signal
// itself): how the tests run the macOS logic on Linux.
package layers

import (
	"os"
	"slices"
	"strings"
)

// MacOS is the CONTAIN_DISABLE name of every layer macOS lacks.
const MacOS = "macos"

var macOSOff = []string{"cgroup", "subreaper", "shim", "pdeathsig", "waiter", "spawn"}

// Disabled reports whether CONTAIN_DISABLE turns layer name off.
func Disabled(name string) bool {
	for _, l := range strings.Split(os.Getenv("CONTAIN_DISABLE"), ",") {
		switch strings.TrimSpace(l) {
		case name:
			return true
		case MacOS:
			if slices.Contains(macOSOff, name) {
				return true
			}
		}
	}
	return false
}
