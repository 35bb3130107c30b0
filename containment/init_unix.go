//go:build linux || darwin

package containment

import "os"

// A copy of the program that Start runs supervises its command from this
// package's init function, as contain's own main runs contain run (see
// internal/earlyrun): the runtime keeps it on the main thread while
// packages are initialised, which contain run needs, with no thread lock
// of its own to pay for, and the program's own initialisation, which a
// copy never needs, is mostly skipped: the copy exits here. Main handles
// the copy where this does not (Windows holds console events until
// initialisation is over).
//
// A copy proves that its host started it before anything else, whatever
// its environment says (takeOrders): this is the program's first chance,
// before its main can look at anything.
func init() {
	if len(os.Args) >= 2 && os.Args[1] == supervisorCommand {
		supervise(true)
	}
}
