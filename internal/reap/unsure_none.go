//go:build !linux && !darwin

package reap

import "github.com/contain-cli/contain/internal/proc"

// Unsure: Windows has no registry; a job object holds every process of
// the session.
type Unsure struct {
	PID, Start int
	Comm, Why  string
	Session    string
}

// FindUnsure finds nothing on Windows.
func FindUnsure(func(string) bool, map[proc.ID]bool) ([]Unsure, error) { return nil, nil }
