package guard

import "errors"

// startCoded: macOS has no memfd to run a built-in waiter from (see
// waiter_linux.go); the guard waits in /bin/sh.
func startCoded() (*Guard, error) {
	return nil, errors.New("no built-in waiter on macOS")
}

// startSpawned: macOS has no memfd either.
func startSpawned() (*Guard, error) { return nil, errors.ErrUnsupported }

type spawnedGuard struct{}

func prepareSpawned() (*spawnedGuard, error) { return nil, errors.ErrUnsupported }

func (*spawnedGuard) start() (*Guard, error) { return nil, errors.ErrUnsupported }
