//go:build !linux && !darwin && !windows

package containment

import (
	"os"
	"os/exec"
)

// supported: contain has no containment for this OS (NewGroup says so).
const supported = false

const ordersEarly = 0

func passPipes(*exec.Cmd, *os.File, *os.File) (func(), string, error) {
	return nil, "", ErrUnsupported
}

func provePipes(string) error { return ErrUnsupported }

func takeOrders(string) ([]string, error) { return nil, ErrUnsupported }

func openPipes(string) (*os.File, *os.File, error) { return nil, nil, ErrUnsupported }

func requestStop() {}
