package main

import (
	"os"
	"strings"
	"syscall"
)

// claimSocket exits 0 when the claim socket of the contain run named in
// RUNNING_PROCESS_ORIGINATOR (@contain-daemons-PID) takes a connection,
// 1 when none listens on it.
func claimSocket() {
	v := os.Getenv("RUNNING_PROCESS_ORIGINATOR")
	pid := v[strings.LastIndexByte(v, ':')+1:]
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		os.Exit(2)
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: "@contain-daemons-" + pid}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
