package proc

import (
	"time"

	"github.com/contain-cli/contain/session"
)

// Entry is one process as a scan of the whole system sees it: the
// primitive that the tracker asks of each OS (/proc on Linux,
// kern.proc.all on macOS).
type Entry struct {
	PID, PPID, Pgrp int
	Sid             int    // 0: not in the scan (macOS); the tracker asks sidOf when it matters
	Start           uint64 // in the OS's unit; with PID, the process's identity
	Zombie          bool
	Comm            string
	// Usage is the process's own use; ChildCPU the CPU time of the
	// children it has waited for (Linux; 0 elsewhere).
	Usage    session.Usage
	ChildCPU time.Duration
}
