//go:build !linux && !windows

package containment

import "os/exec"

// holds: here (macOS) each command is held by a copy of its own: macOS
// has no cgroup nor job to hold a session whose processes are no
// descendants of its holder.
func (g *Group) holds() bool { return false }

type command struct{ pid int }

type heldAttrs struct{ tag string }

func (a *heldAttrs) close() {}

func (g *Group) startHeld(*exec.Cmd) (bool, error) { return false, ErrUnsupported }

func (g *Group) waitHeld(*exec.Cmd, *command) error { return ErrUnsupported }
