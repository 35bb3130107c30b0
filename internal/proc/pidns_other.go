//go:build !linux

package proc

import "github.com/contain-cli/contain/session"

// NSName is "" where there are no PID namespaces: names made by contain
// carry none.
func NSName() string { return "" }

// NSOfName takes only a name without a namespace part where there are no
// PID namespaces.
func NSOfName(part string) (ns uint64, ok bool) { return 0, part == "" }

// nsIndex is empty where there are no PID namespaces.
type nsIndex struct{}

func newNSIndex() *nsIndex { return &nsIndex{} }

func (*nsIndex) lookup(ns uint64, pid int) (session.Originator, error) {
	return LookupOriginator(ns, pid)
}
