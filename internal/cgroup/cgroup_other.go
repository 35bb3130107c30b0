//go:build !linux

package cgroup

// FindLeftovers finds nothing: only Linux has cgroups.
func FindLeftovers() ([]Leftover, error) { return nil, nil }

// OfRun is empty: only Linux has cgroups.
func OfRun(int) []Leftover { return nil }

// Delegation is what contain changed to enable controllers: nothing,
// where there are no cgroups.
type Delegation struct{}

// Delegated is nil: only Linux has cgroups to delegate.
func Delegated(parent, leaf string, enabled []string) *Delegation { return nil }

// Undo has nothing to undo.
func (*Delegation) Undo() error { return nil }
