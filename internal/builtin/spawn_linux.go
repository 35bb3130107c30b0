package builtin

import "syscall"

// Spec is what Spawn starts.
type Spec struct {
	Argv, Env []string
	// Moves put descriptors in place: Src becomes Dst, open across the
	// exec (Src == Dst: Dst loses close-on-exec).
	Moves []Move
	// Prog is the program's descriptor once the moves are done.
	Prog int
	// Setsid: the child leads a session of its own; else a process
	// group of its own.
	Setsid bool
	// Path, when set, is what the child executes (execve), not Prog.
	Path string
	// Pdeathsig is sent to the child when the thread that spawned it ends
	// (PR_SET_PDEATHSIG); should that thread's process have ended before
	// the child set it, the child sends it to itself. 0: none.
	Pdeathsig syscall.Signal
	// Foreground: the child's process group takes the foreground of the
	// terminal open as Ctty (TIOCSPGRP).
	Foreground bool
	Ctty       int
	// CgroupFD, with UseCgroupFD: the child starts in that cgroup
	// (CLONE_INTO_CGROUP, Linux 5.7).
	UseCgroupFD bool
	CgroupFD    int
	// Vfork: the calling thread waits until the child has executed
	// (CLONE_VFORK): Start returns with Executed's answer ready. The child
	// runs at once on the caller's CPU, where a child that goes on beside
	// its parent may first wait for another CPU to wake.
	Vfork bool
}

// Move is one descriptor of Spec.Moves.
type Move struct{ Src, Dst int }
