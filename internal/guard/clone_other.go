//go:build (linux && !amd64) || darwin

package guard

import "errors"

// startCloned: the cloned waiter is linux/amd64 code.
func startCloned() (*Guard, error) {
	return nil, errors.New("no cloned waiter for this OS and architecture")
}
