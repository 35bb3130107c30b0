// Command setsid is what the tests run as setsid(1) on a machine without
// util-linux's (one with only Go, sh and coreutils): it runs PROGRAM in a
// new session, as util-linux's does. A process group leader cannot start
// a session, so there (or with -f) it starts PROGRAM as a child in a new
// session and exits at once, leaving it behind; elsewhere it calls
// setsid(2) and executes PROGRAM in its own place.
//
// A program keeps the signals ignored when it started (trap ” TERM in the
// script before setsid): Go's runtime takes them over (all but HUP and
// INT), so they are read from the parent, the shell that started this one,
// and ignored again before PROGRAM starts.
//
//	setsid [-f] [--] PROGRAM [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// ignoreAsParent ignores every signal the parent ignores.
func ignoreAsParent() {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", os.Getppid()))
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(l, "SigIgn:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return
		}
		for n := 1; n <= 64; n++ {
			sig := syscall.Signal(n)
			if mask&(1<<(n-1)) != 0 && sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
				signal.Ignore(sig)
			}
		}
	}
}

func main() {
	// A background job of a shell without job control starts with INT
	// and QUIT ignored; Go keeps INT so, and takes QUIT.
	if signal.Ignored(syscall.SIGINT) {
		signal.Ignore(syscall.SIGQUIT)
	}
	ignoreAsParent()
	args, fork := os.Args[1:], false
	for len(args) > 0 {
		if args[0] == "-f" || args[0] == "--fork" {
			fork, args = true, args[1:]
			continue
		}
		if args[0] == "--" {
			args = args[1:]
		}
		break
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: setsid [-f] [--] PROGRAM [ARG...]")
		os.Exit(1)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "setsid: failed to execute %s: %v\n", args[0], err)
		os.Exit(127)
	}
	if fork || syscall.Getpgrp() == os.Getpid() {
		cmd := exec.Command(path, args[1:]...)
		cmd.Args[0] = args[0]
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "setsid: failed to execute %s: %v\n", args[0], err)
			os.Exit(126)
		}
		os.Exit(0)
	}
	if _, err := syscall.Setsid(); err != nil {
		fmt.Fprintf(os.Stderr, "setsid: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "setsid: failed to execute %s: %v\n", args[0], err)
	os.Exit(126)
}
