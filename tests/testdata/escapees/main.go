// Command escapees is a COMMAND for roots without a shell (a distroless
// image has no /bin/sh, no sleep): it leaves processes behind as a shell
// script would, for tests/guard_shell_test.go. It is built static.
//
//	escapees spawn FILE   start a sleeper in the background and one in a session of its own, write "PID PID" to FILE, sleep
//	escapees leave FILE   the same, then exit 0 at once
//	escapees sleep        sleep forever
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: escapees spawn FILE | leave FILE | sleep")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "spawn", "leave":
		if len(os.Args) != 3 {
			os.Exit(2)
		}
		bg := exec.Command(os.Args[0], "sleep")
		sid := exec.Command(os.Args[0], "sleep")
		sid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		for _, c := range []*exec.Cmd{bg, sid} {
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "escapees:", err)
				os.Exit(1)
			}
		}
		// Written whole, then renamed: the reader sees both PIDs or none.
		tmp := os.Args[2] + ".new"
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", bg.Process.Pid, sid.Process.Pid), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "escapees:", err)
			os.Exit(1)
		}
		if err := os.Rename(tmp, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "escapees:", err)
			os.Exit(1)
		}
		if os.Args[1] == "leave" {
			os.Exit(0)
		}
		fallthrough
	case "sleep":
		// Not select {}: with no other goroutine the runtime takes that
		// for a deadlock and exits at once.
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(2)
}
