//go:build !linux && !darwin

package containment

import (
	"os/exec"
	"syscall"
)

// holdSupported: here (Windows) each command is held by a copy of its
// own: a held session would need its Job Object handed to the program.
const holdSupported = false

type command struct{ pid int }

type heldAttrs struct{ tag string }

func (a *heldAttrs) close() {}

func (g *Group) startHeld(*exec.Cmd) error { return ErrUnsupported }

func (g *Group) waitHeld(*exec.Cmd, *command) error { return ErrUnsupported }

var _ = syscall.SIGTERM
