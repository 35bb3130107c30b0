//go:build !linux

package cgroup

// FindLeftovers finds nothing: only Linux has cgroups.
func FindLeftovers() ([]Leftover, error) { return nil, nil }

// OfRun is empty: only Linux has cgroups.
func OfRun(int) []Leftover { return nil }
