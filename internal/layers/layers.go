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
//
// It is never honoured silently: contain run says on stderr, without -v,
// which layers it turns off (Off). The library's copy never reads it
// (Ignore): its settings are its Options alone.
package layers

import (
	"os"
	"slices"
	"strings"
)

// MacOS is the CONTAIN_DISABLE name of every layer macOS lacks.
const MacOS = "macos"

// Var is the variable's name.
const Var = "CONTAIN_DISABLE"

var macOSOff = []string{"cgroup", "subreaper", "shim", "pdeathsig", "waiter", "spawn"}

// all are the layers CONTAIN_DISABLE can turn off, in the order Off
// names them.
var all = []string{"cgroup", "subreaper", "shim", "pdeathsig", "systemd", "waiter", "keeper", "spawn"}

// ignored: Ignore was called.
var ignored bool

// Ignore makes this process read no CONTAIN_DISABLE: every layer is on.
func Ignore() { ignored = true }

// Disabled reports whether CONTAIN_DISABLE turns layer name off.
func Disabled(name string) bool {
	if ignored {
		return false
	}
	for _, l := range strings.Split(os.Getenv(Var), ",") {
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

// Off lists the layers that CONTAIN_DISABLE turns off (none, mostly).
func Off() []string {
	if ignored || os.Getenv(Var) == "" {
		return nil
	}
	var off []string
	for _, l := range all {
		if Disabled(l) {
			off = append(off, l)
		}
	}
	return off
}
