package proc

import "errors"

// ErrHidden: the process runs, but the OS hides it from this user (on
// Linux, a /proc mounted hidepid: HiddenError). Such a process is alive,
// never gone.
var ErrHidden = errors.New("hidden by /proc")
