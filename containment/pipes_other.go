//go:build !linux && !darwin && !windows

package containment

import (
	"os"
	"os/exec"

	"github.com/contain-cli/contain/internal/run"
)

// supported: contain has no containment for this OS (NewGroup says so).
const supported = false

const specEarly = 0

func passPipes(*exec.Cmd, *os.File, *os.File) (func(), string, error) {
	return nil, "", ErrUnsupported
}

const extraFiles = false

func holdExtraFiles(string) (func(), func()) { return func() {}, func() {} }

func provePipes(string) error { return ErrUnsupported }

func takeSpec(string) (run.Spec, error) { return run.Spec{}, ErrUnsupported }

func openPipes(string) (*os.File, *os.File, error) { return nil, nil, ErrUnsupported }

var copyVars []string
