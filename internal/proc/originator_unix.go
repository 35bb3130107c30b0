//go:build linux || darwin

package proc

import "syscall"

// Ask sends the originator sig, through its pin, to ask it to close its
// group. ErrGone: it has ended.
func (o *OriginatorPin) Ask(sig syscall.Signal) error { return o.pin.Signal(sig) }
