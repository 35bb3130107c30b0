//go:build !linux

package scope

// HoldArg is argv[1] of contain as a scope's placeholder (Linux only).
const HoldArg = "__hold"

// Hold is not used where there is no systemd.
func Hold() int { return 2 }
