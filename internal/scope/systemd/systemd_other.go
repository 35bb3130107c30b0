//go:build !linux

package systemd

import (
	"fmt"
	"os"
)

// Main: systemd and its scopes are Linux's.
func Main([]string) int {
	fmt.Fprintln(os.Stderr, "contain: no systemd scope on this OS")
	return 2
}
