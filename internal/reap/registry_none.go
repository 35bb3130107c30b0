//go:build !linux && !darwin

package reap

import (
	"github.com/contain-cli/contain/internal/proc"
)

// ListForReap is ListTagged: there are no registries here.
func ListForReap() (proc.Listing, error) { return proc.ListTagged() }
