//go:build !linux && !darwin

package registry

import (
	"fmt"
	"runtime"

	"github.com/contain-cli/contain/internal/proc"
)

// Registry: there is none on this OS. On Windows a job object ends every
// process of the session when contain ends, however it ends, so nothing is
// left for reap to find; openRegistry says so (ErrUnsupported) and reap
// finds what carries a readable tag only.
type Registry struct{}

func OpenRegistry(string, int, uint64) (*Registry, error) {
	return nil, fmt.Errorf("registry on %s: %w", runtime.GOOS, proc.ErrUnsupported)
}

func (r *Registry) Member(int, uint64) error { return nil }
func (r *Registry) Spared(int, uint64) error { return nil }
func (r *Registry) Remove()                  {}
func (r *Registry) Close([]proc.ID) string   { return "" }

// PruneRegistries: there are no registries here.
func PruneRegistries() (int, error) { return 0, nil }
