//go:build !linux

package proc

// NSName is "" where there are no PID namespaces: names made by contain
// carry none.
func NSName() string { return "" }

// NSOfName takes only a name without a namespace part where there are no
// PID namespaces.
func NSOfName(part string) (ns uint64, ok bool) { return 0, part == "" }
