//go:build !linux

package scope

// HelperArg is argv[1] of the helper that asks systemd (Linux only).
const HelperArg = "__scope"
