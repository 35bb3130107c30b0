//go:build linux && !amd64

package builtin

import (
	"errors"
	"syscall"
)

// Spec is what Spawn starts (spawn_linux_amd64.go).
type Spec struct {
	Argv, Env []string
	Moves     []Move
	Prog      int
	Setsid    bool
	Path      string
	Pdeathsig syscall.Signal
	// Foreground, Ctty, UseCgroupFD, CgroupFD, Vfork: spawn_linux_amd64.go.
	Foreground  bool
	Ctty        int
	UseCgroupFD bool
	CgroupFD    int
	Vfork       bool
}

// Move is one descriptor of Spec.Moves.
type Move struct{ Src, Dst int }

// Child is a program that Spawn started.
type Child struct{ Pid int }

// ErrNoSpawn: Spawn has no code for this machine.
var ErrNoSpawn = errors.New("no built-in spawn for this machine")

// Spawn is linux/amd64's.
func Spawn(Spec) (*Child, error) { return nil, ErrNoSpawn }

// Executed is linux/amd64's.
func (*Child) Executed() error { return ErrNoSpawn }

// Ended is linux/amd64's.
func (*Child) Ended() {}

// Spawner is linux/amd64's.
type Spawner struct{}

// NewSpawner is linux/amd64's.
func NewSpawner(Spec) (*Spawner, error) { return nil, ErrNoSpawn }

// Start is linux/amd64's.
func (*Spawner) Start() (*Child, error) { return nil, ErrNoSpawn }

// Drop is linux/amd64's.
func (*Spawner) Drop() {}
