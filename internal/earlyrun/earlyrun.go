// Package earlyrun runs contain run, the crash guard and the shim from its
// init function, before urfave/cli and the packages only it needs
// (regexp, text/template, net/netip; and, in a build without the
// urfave_cli_no_docs tag, as go install makes it, its man page generator
// and a markdown parser) are initialised: that initialisation is skipped,
// and the process exits here. main imports it for that alone.
//
// Go initialises packages in the order of their import paths, each as
// soon as its own imports are: this path sorts before
// github.com/urfave/cli/v2 and the standard packages only urfave/cli
// needs, and neither it nor what it imports imports any of them.
//
// Windows runs console control handlers on threads of its own, and Go
// holds such calls until package initialisation is done: there main calls
// runcmd.Dispatch, the same function, once initialisation is over.
package earlyrun

import (
	"os"
	"runtime"

	// Before anything of contain runs: nothing where AT_SECURE is set.
	_ "github.com/contain-cli/contain/internal/entry"
	"github.com/contain-cli/contain/internal/runcmd"
)

func init() {
	if runtime.GOOS != "windows" {
		runcmd.DispatchInInit(os.Args)
	}
}
