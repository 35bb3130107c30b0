//go:build darwin

package tests

// setsid runs its arguments in a new session (escapeeLine): setsid(1) is
// not on macOS; perl is.
const setsid = `perl -MPOSIX -e 'POSIX::setsid() or die; exec @ARGV or die' `

// prepare: the macOS tests need nothing beside contain (runTests).
func prepare(dir string) (end func(), err error) { return func() {}, nil }
