package layers

import (
	"slices"
	"testing"
)

// TestOff: the layers CONTAIN_DISABLE turns off, named for contain run's
// line; none once ignored (the library's copy).
func TestOff(t *testing.T) {
	for _, c := range []struct {
		value string
		want  []string
	}{
		{"", nil},
		{"nothing-known", nil},
		{"cgroup, keeper", []string{"cgroup", "keeper"}},
		{"macos", []string{"cgroup", "subreaper", "shim", "pdeathsig", "waiter", "spawn"}},
	} {
		t.Setenv(Var, c.value)
		if got := Off(); !slices.Equal(got, c.want) {
			t.Errorf("%s=%q: Off() = %q, want %q", Var, c.value, got, c.want)
		}
	}
	t.Setenv(Var, "cgroup")
	Ignore()
	defer func() { ignored = false }()
	if Disabled("cgroup") || Off() != nil {
		t.Error("Ignore: CONTAIN_DISABLE still read")
	}
}
