//go:build linux && !amd64

package builtin

import "errors"

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
