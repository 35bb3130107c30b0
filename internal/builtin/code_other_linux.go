//go:build linux && !amd64

package builtin

// There is no code for this machine: see Available.
var Waiter, Keeper []byte

const machine = 0
