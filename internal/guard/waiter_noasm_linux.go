//go:build linux && !amd64

package guard

// waiterCode: there is no built-in waiter for this architecture (see
// waiter_linux.go); the guard waits in /bin/sh.
var waiterCode []byte

const waiterMachine = 0
