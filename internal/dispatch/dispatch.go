// Package dispatch is the one way into contain's hidden entries, the
// processes contain starts of itself that no user types: the crash guard
// (contain __guard), the shim (contain __shim) and, in a program that
// links package containment, the copy that holds one command
// (__contain_group). Both contain's own main (package runcmd, from
// internal/earlyrun's init function) and package containment (from its
// init function, so that any binary that links it, a test binary
// included, is one of them with or without containment.Main) call
// Hidden; each entry proves that it was started so before it acts
// (package entry).
package dispatch

import (
	"os"

	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/shim"
)

// CopyArg is the first argument of package containment's copy.
const CopyArg = "__contain_group"

// Hidden runs the hidden entry that args (os.Args) name and exits;
// it returns when args name none. copy runs the library's copy (nil: this
// program has none, and CopyArg is not an entry). inInit: it is called
// from an init function, where the runtime keeps the main goroutine on
// the main thread.
func Hidden(args []string, inInit bool, copy func(inInit bool)) {
	if len(args) < 2 {
		return
	}
	switch args[1] {
	case guard.Arg:
		os.Exit(guard.Main(args[2:]))
	case shim.Arg:
		os.Exit(shim.Main(args[2:]))
	case CopyArg:
		if copy != nil {
			copy(inInit)
			os.Exit(125) // copy exits; this is never reached
		}
	}
}
