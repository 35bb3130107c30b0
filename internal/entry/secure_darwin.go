package entry

import "golang.org/x/sys/unix"

// secure is issetugid(2): the process was set-user-ID or set-group-ID at
// its exec, or has changed its ids since.
func secure() bool { return unix.Issetugid() }
