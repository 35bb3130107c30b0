package registry

import (
	"testing"

	"github.com/contain-cli/contain/internal/proc"
)

// TestRegistryOfAnotherNamespace: a registry named for another PID
// namespace (a container's, in a /tmp it shares with its host) is never
// read: its PIDs name other processes here. One named for this
// namespace is.
func TestRegistryOfAnotherNamespace(t *testing.T) {
	if _, ok := registryOrigin("session.5.100.ns1"); ok {
		t.Errorf("session.5.100.ns1 (another namespace) is read")
	}
	mine := "session.5.100"
	if ns := proc.NSName(); ns != "" {
		mine += "." + ns
	}
	if id, ok := registryOrigin(mine); !ok || id.PID != 5 || id.Start != 100 {
		t.Errorf("%s (this namespace) = %+v, %v", mine, id, ok)
	}
	if want := mine; registryName(5, 100) != want {
		t.Errorf("registryName = %s, want %s", registryName(5, 100), want)
	}
}
