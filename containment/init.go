package containment

import (
	"os"

	"github.com/contain-cli/contain/internal/dispatch"
)

// supervisorCommand is the first argument of a copy of the program that
// holds one command (Group.Start).
const supervisorCommand = dispatch.CopyArg

// A copy of the program that Start runs, and the crash guard and the shim
// it starts, run from this package's init function, as contain's own main
// runs them (see internal/earlyrun): on Linux and macOS the runtime keeps
// the main goroutine on the main thread while packages are initialised,
// which contain run needs, and the program's own initialisation, which a
// copy never needs, is mostly skipped: the copy exits here. Any binary
// that links the package is so a copy when run as one, test binaries
// included, whether or not it calls Main.
//
// On Windows, Go holds console control events until initialisation is
// over: a copy there hears no Ctrl-C or Ctrl-Break of its console (its
// program does, and Close and the program's end reach the copy on its
// pipe, as everywhere).
//
// A copy proves that its host started it before anything else, whatever
// its environment says: this is the program's first chance, before its
// main can look at anything.
func init() { dispatch.Hidden(os.Args, true, supervise) }
