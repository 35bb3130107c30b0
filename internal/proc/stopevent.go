package proc

import "strconv"

// StopEventName is the name of the event through which contain stop asks
// the Windows contain run with PID pid to close its group, as a console
// control event would: Windows has no signal that one process can send
// another. contain run creates it (an auto-reset event, in the logon
// session's Local namespace, with the default security of its user), and
// it goes when contain run ends.
func StopEventName(pid int) string { return `Local\contain-stop-` + strconv.Itoa(pid) }
