//go:build linux || darwin

package run

import (
	"github.com/contain-cli/contain/internal/guard"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
)

// crashGuard is the runner's crash guard: the one PrepareRun started
// (withGuard), or noGuard where there is none (a Run of another program,
// a guard that could not start or be briefed). Told nothing, it ends
// nothing: the runner tells it what it learns without asking first.
type crashGuard interface {
	// guarding: a guard will end the session should contain die (COMMAND
	// can then get the -s signal first: Pdeathsig).
	guarding() bool
	PID() int // 0: none
	Waiter() string
	Ready() (failed, err error)
	Cgroup(o guard.CgroupOrder) error
	Command(pgrp int, since uint64) error
	Shim(pid int, start uint64) error
	Member(pid int, start uint64) error
	Release(pid int, start uint64) error
	Hook(pid int, start uint64) error
	HookEnded() error
	Marker(ino uint64) error
	MarkerEnd() int // macOS: the end of the marker whose other end the guard holds; -1: none
	MarkerPair(m track.Marker) error
	Lineage(ids proc.MacIDs) error
	Kill()
}

// withGuard is a guard that runs.
type withGuard struct{ *guard.Guard }

func (withGuard) guarding() bool { return true }

// noGuard is no guard.
type noGuard struct{}

func (noGuard) guarding() bool                 { return false }
func (noGuard) PID() int                       { return 0 }
func (noGuard) Waiter() string                 { return "" }
func (noGuard) Ready() (error, error)          { return nil, nil }
func (noGuard) Cgroup(guard.CgroupOrder) error { return nil }
func (noGuard) Command(int, uint64) error      { return nil }
func (noGuard) Shim(int, uint64) error         { return nil }
func (noGuard) Member(int, uint64) error       { return nil }
func (noGuard) Release(int, uint64) error      { return nil }
func (noGuard) Hook(int, uint64) error         { return nil }
func (noGuard) HookEnded() error               { return nil }
func (noGuard) Marker(uint64) error            { return nil }
func (noGuard) MarkerEnd() int                 { return -1 }
func (noGuard) MarkerPair(track.Marker) error  { return nil }
func (noGuard) Lineage(proc.MacIDs) error      { return nil }
func (noGuard) Kill()                          {}
